//! Authentication (static bearer tokens) and authorization (read or write
//! rights per type), checked before any handler runs. See the
//! [module docs](super#authentication).

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, header};
use actix_web::middleware::{Next, from_fn};
use actix_web::{HttpMessage, HttpRequest, ResponseError, guard, web};

use super::Status;
use super::params::parse_bool;

/// The user name of requests without a token (when
/// [`anonymous_read`](super::KubernetesApi::anonymous_read) lets them in).
pub const ANONYMOUS: &str = "system:anonymous";

/// Static bearer tokens, each mapped to a [`User`]: what a request's
/// `Authorization: Bearer <token>` header (kubectl `--token`) is checked
/// against. Tokens are compared in constant time.
///
/// ```
/// use cosi_runtime::kubernetes::{Tokens, User};
///
/// let tokens = Tokens::new()
///     .token("s3cret", User::new("admin").write_all())
///     .token("r0", User::new("viewer").read(["linkconfigs"]));
/// assert_eq!(tokens.len(), 2);
/// ```
#[derive(Clone, Default)]
pub struct Tokens {
    tokens: Vec<(Box<[u8]>, Arc<User>)>,
}

impl fmt::Debug for Tokens {
    /// The users only: tokens are secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.tokens.iter().map(|(_, user)| user)).finish()
    }
}

impl Tokens {
    /// No tokens yet.
    pub fn new() -> Self {
        Tokens::default()
    }

    /// Adds `token` for `user`. An empty token is never matched (a request
    /// must present a non-empty one); a token given twice keeps its first user.
    #[must_use]
    pub fn token(mut self, token: impl Into<String>, user: User) -> Self {
        let token = token.into().into_bytes().into_boxed_slice();
        if !token.is_empty() {
            self.tokens.push((token, Arc::new(user)));
        }
        self
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The user of `presented`: every token is compared, each in constant
    /// time, so the time taken tells nothing of which one matched or how
    /// much of one did.
    fn user(&self, presented: &[u8]) -> Option<Arc<User>> {
        let mut found = None;
        for (token, user) in &self.tokens {
            if constant_time_eq(token, presented) && found.is_none() {
                found = Some(user.clone());
            }
        }
        found
    }
}

/// Equal bytes, in a time that depends on the lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
    }
    std::hint::black_box(diff) == 0
}

/// A set of types a right applies to: some plurals, or all of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Rights {
    all: bool,
    plurals: BTreeSet<String>,
}

impl Rights {
    fn allows(&self, plural: &str) -> bool {
        self.all || self.plurals.contains(plural)
    }
}

/// Who a token stands for, and what it may do: read (get, list, watch) or
/// write (create, update, patch, delete; write implies read) some types,
/// named by their plural (`linkconfigs`), or all of them. A user with no
/// rights may still read discovery (`/version`, `/api`, `/apis`, ...).
///
/// ```
/// use cosi_runtime::kubernetes::User;
///
/// let viewer = User::new("viewer").read(["linkconfigs"]);
/// assert!(viewer.can_read("linkconfigs") && !viewer.can_write("linkconfigs"));
/// let operator = User::new("operator").read_all().write(["linkconfigs"]);
/// assert!(operator.can_read("routes") && operator.can_write("linkconfigs"));
/// assert!(!operator.can_write("routes"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    name: String,
    read: Rights,
    write: Rights,
}

impl User {
    /// A user named `name` (what a `403 Forbidden` names), with no rights yet.
    pub fn new(name: impl Into<String>) -> Self {
        User { name: name.into(), read: Rights::default(), write: Rights::default() }
    }

    /// May read the types of these plurals.
    #[must_use]
    pub fn read<S: Into<String>>(mut self, plurals: impl IntoIterator<Item = S>) -> Self {
        self.read.plurals.extend(plurals.into_iter().map(Into::into));
        self
    }

    /// May read every type.
    #[must_use]
    pub fn read_all(mut self) -> Self {
        self.read.all = true;
        self
    }

    /// May read and write the types of these plurals.
    #[must_use]
    pub fn write<S: Into<String>>(mut self, plurals: impl IntoIterator<Item = S>) -> Self {
        self.write.plurals.extend(plurals.into_iter().map(Into::into));
        self
    }

    /// May read and write every type.
    #[must_use]
    pub fn write_all(mut self) -> Self {
        self.write.all = true;
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it may get, list and watch the type of `plural`.
    pub fn can_read(&self, plural: &str) -> bool {
        self.read.allows(plural) || self.write.allows(plural)
    }

    /// Whether it may create, update, patch and delete objects of the type of `plural`.
    pub fn can_write(&self, plural: &str) -> bool {
        self.write.allows(plural)
    }
}

/// Who may do what: the tokens and anonymous access. `None` in the API:
/// open (nothing configured).
#[derive(Clone, Debug, Default)]
pub(crate) struct Access {
    pub(crate) tokens: Tokens,
    pub(crate) anonymous_read: bool,
}

/// Who sent a request, as the review handlers (`SelfSubjectAccessReview`,
/// `SelfSubjectReview`) read it from the request's extensions. On a server
/// with no access configured there is none: everyone may do everything.
#[derive(Clone, Debug)]
pub(crate) struct Caller {
    /// `None`: anonymous (let in by `anonymous_read`).
    user: Option<Arc<User>>,
}

impl Caller {
    /// The user name (`system:anonymous` for an anonymous caller).
    pub(crate) fn name(&self) -> &str {
        self.user.as_deref().map_or(ANONYMOUS, User::name)
    }

    /// The groups the apiserver puts its users in.
    pub(crate) fn groups(&self) -> Vec<&'static str> {
        match self.user {
            Some(_) => vec!["system:authenticated"],
            None => vec!["system:unauthenticated"],
        }
    }

    /// Whether the caller may `verb` the type of `plural` (`*` for any
    /// type): the reads `get`, `list`, `watch`; every other verb a write.
    pub(crate) fn may(&self, verb: &str, plural: &str) -> bool {
        let read = matches!(verb, "get" | "list" | "watch");
        match &self.user {
            None => read,
            Some(user) if plural == "*" => {
                if read {
                    user.read.all || user.write.all
                } else {
                    user.write.all
                }
            }
            Some(user) if read => user.can_read(plural),
            Some(user) => user.can_write(plural),
        }
    }
}

/// Who sent a request.
enum Principal {
    Anonymous,
    User(Arc<User>),
}

impl Principal {
    fn name(&self) -> &str {
        match self {
            Principal::Anonymous => ANONYMOUS,
            Principal::User(user) => user.name(),
        }
    }
}

/// What a request asks, as authorization sees it.
struct Target<'a> {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, or the method for other methods.
    verb: String,
    write: bool,
    /// `None`: a path that names no resource type (discovery and the like).
    resource: Option<ResourceTarget<'a>>,
}

struct ResourceTarget<'a> {
    group: &'a str,
    plural: &'a str,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
}

impl<'a> Target<'a> {
    /// `/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/...]]`
    /// names a type; every other path (discovery, `/api/v1/namespaces/{ns}`,
    /// `/openapi/...`) does not.
    fn of(req: &'a HttpRequest) -> Self {
        let write = req.method() != Method::GET;
        let segments: Vec<&str> = req.path().trim_matches('/').split('/').collect();
        let resource = match segments.as_slice() {
            ["apis", group, _version, "namespaces", namespace, plural, rest @ ..] => {
                Some(ResourceTarget {
                    group,
                    plural,
                    namespace: Some(namespace),
                    name: rest.first().copied(),
                })
            }
            ["apis", group, _version, plural, rest @ ..] if !plural.is_empty() => {
                Some(ResourceTarget { group, plural, namespace: None, name: rest.first().copied() })
            }
            _ => None,
        };
        let named = resource.as_ref().is_some_and(|r| r.name.is_some());
        let verb = match *req.method() {
            Method::GET if watching(req.query_string()) => "watch".to_owned(),
            Method::GET if named || resource.is_none() => "get".to_owned(),
            Method::GET => "list".to_owned(),
            Method::POST => "create".to_owned(),
            Method::PUT => "update".to_owned(),
            Method::PATCH => "patch".to_owned(),
            Method::DELETE if named || resource.is_none() => "delete".to_owned(),
            Method::DELETE => "deletecollection".to_owned(),
            ref other => other.as_str().to_lowercase(),
        };
        Target { verb, write, resource }
    }
}

/// `watch=true` (Go's booleans) in a query string.
fn watching(query: &str) -> bool {
    web::Query::<Vec<(String, String)>>::from_query(query).is_ok_and(|q| {
        q.iter().any(|(k, v)| k == "watch" && parse_bool("watch", v).unwrap_or(false))
    })
}

impl Access {
    /// Who sent `req`: `Err` (401) for a token nobody has, or a header that is
    /// not `Bearer <token>`.
    fn authenticate(&self, req: &HttpRequest) -> Result<Principal, Status> {
        let Some(value) = req.headers().get(header::AUTHORIZATION) else {
            return Ok(Principal::Anonymous);
        };
        let value = value.as_bytes();
        let token = match value.get(..7) {
            Some(scheme) if scheme.eq_ignore_ascii_case(b"bearer ") => value[7..].trim_ascii(),
            _ => return Err(Status::unauthorized()),
        };
        self.tokens.user(token).map(Principal::User).ok_or_else(Status::unauthorized)
    }

    /// The caller when `req` may reach its handler; otherwise the 401 or
    /// 403 to answer.
    fn authorize(&self, req: &HttpRequest) -> Result<Caller, Status> {
        // As the apiserver's `system:public-info-viewer`: anyone may ask
        // whether the server is healthy.
        if req.method() == Method::GET && super::health::is_health_path(req.path()) {
            return Ok(Caller { user: None });
        }
        let principal = self.authenticate(req)?;
        if matches!(principal, Principal::Anonymous) && !self.anonymous_read {
            return Err(Status::unauthorized());
        }
        let caller = Caller {
            user: match &principal {
                Principal::Anonymous => None,
                Principal::User(user) => Some(user.clone()),
            },
        };
        // Any caller may ask what it may do, and who it is.
        if req.method() == Method::POST && is_review_path(req.path()) {
            return Ok(caller);
        }
        let target = Target::of(req);
        let allowed = match (&principal, &target.resource) {
            // Anonymous users (let in by anonymous_read) read everything, write nothing.
            (Principal::Anonymous, _) => !target.write,
            // Discovery and other paths that name no type: any known user
            // (their handlers answer writes 405 or 404).
            (Principal::User(_), None) => true,
            (Principal::User(user), Some(r)) if target.write => user.can_write(r.plural),
            (Principal::User(user), Some(r)) => user.can_read(r.plural),
        };
        if allowed {
            return Ok(caller);
        }
        Err(forbidden(principal.name(), &target, req.path()))
    }

    /// Mounts `routes` behind the check, on the API's paths only (an
    /// application's own routes mounted beside them are left alone).
    pub(crate) fn mount(
        self: Arc<Self>,
        cfg: &mut web::ServiceConfig,
        routes: fn(&mut web::ServiceConfig),
    ) {
        let scope = web::scope("")
            .guard(guard::fn_guard(|ctx| is_api_path(ctx.head().uri.path())))
            .wrap(from_fn(move |req: ServiceRequest, next: Next<_>| {
                let access = self.clone();
                async move { access.check(req, next).await }
            }))
            .configure(routes);
        cfg.service(scope);
    }

    async fn check<B: MessageBody>(
        &self,
        req: ServiceRequest,
        next: Next<B>,
    ) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
        match self.authorize(req.request()) {
            Ok(caller) => {
                req.extensions_mut().insert(caller);
                next.call(req).await.map(ServiceResponse::map_into_left_body)
            }
            Err(status) => {
                if status.code() == 403 {
                    tracing::debug!("Kubernetes API: {status}");
                }
                Ok(req.into_response(status.error_response()).map_into_right_body())
            }
        }
    }
}

/// The versions of `authentication.k8s.io` whose `SelfSubjectReview` is served.
pub(crate) const REVIEW_VERSIONS: [&str; 3] = ["v1", "v1beta1", "v1alpha1"];

/// Whether `path` is one of the review endpoints (see `review.rs`): any
/// caller may ask what it may do, and who it is.
pub(crate) fn is_review_path(path: &str) -> bool {
    let version = path
        .strip_prefix("/apis/authentication.k8s.io/")
        .and_then(|rest| rest.strip_suffix("/selfsubjectreviews"));
    path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        || version.is_some_and(|v| REVIEW_VERSIONS.contains(&v))
}

/// The paths the API serves (and so checks): `/version`, `/api...`,
/// `/apis...`, `/openapi...`.
pub(crate) fn is_api_path(path: &str) -> bool {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or_default();
    matches!(first, "version" | "api" | "apis" | "openapi") || super::health::is_health_path(path)
}

/// 403, worded as the apiserver words it: `linkconfigs.net.cosi.dev "eth0"
/// is forbidden: User "viewer" cannot delete resource "linkconfigs" in API
/// group "net.cosi.dev" in the namespace "config"`.
fn forbidden(user: &str, target: &Target<'_>, path: &str) -> Status {
    let verb = &target.verb;
    let Some(r) = &target.resource else {
        return Status::forbidden_for(
            format!("forbidden: User \"{user}\" cannot {verb} path \"{path}\""),
            None,
        );
    };
    let (group, plural) = (r.group, r.plural);
    let object = match r.name {
        Some(name) => format!("{plural}.{group} \"{name}\""),
        None => format!("{plural}.{group}"),
    };
    let scope = match r.namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_owned(),
    };
    Status::forbidden_for(
        format!(
            "{object} is forbidden: User \"{user}\" cannot {verb} resource \"{plural}\" in API group \"{group}\" {scope}"
        ),
        Some((group, plural, r.name.unwrap_or_default())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn access(anonymous_read: bool) -> Access {
        Access {
            tokens: Tokens::new()
                .token("s3cret", User::new("admin").write_all())
                .token("r0", User::new("viewer").read(["linkconfigs"])),
            anonymous_read,
        }
    }

    const LINKS: &str = "/apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs";

    fn code(access: &Access, method: Method, path: &str, token: Option<&str>) -> u16 {
        let mut req = TestRequest::default().method(method).uri(path);
        if let Some(t) = token {
            req = req.insert_header((header::AUTHORIZATION, format!("Bearer {t}")));
        }
        match access.authorize(&req.to_http_request()) {
            Ok(_) => 200,
            Err(status) => status.code(),
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"s3cret", b"s3cret"));
        for other in [&b"s3cre"[..], b"s3cret!", b"S3cret", b"", b"s3creu"] {
            assert!(!constant_time_eq(b"s3cret", other), "{other:?}");
        }
        let tokens = Tokens::new().token("", User::new("nobody")).token("zz9", User::new("a"));
        assert_eq!(tokens.len(), 1, "an empty token is never added");
        assert!(tokens.user(b"").is_none());
        assert_eq!(tokens.user(b"zz9").unwrap().name(), "a");
        assert!(!format!("{tokens:?}").contains("zz9"), "Debug shows no token");
    }

    #[test]
    fn anyone_may_ask_about_health_and_nobody_may_write_there() {
        let a = access(false);
        for path in ["/healthz", "/livez", "/readyz?verbose", "/livez/ping"] {
            assert_eq!(code(&a, Method::GET, path, None), 200, "{path}");
            assert_eq!(code(&a, Method::GET, path, Some("wrong")), 200, "{path}");
        }
        assert_eq!(code(&a, Method::POST, "/healthz", None), 401, "a write still needs a token");
        assert_eq!(code(&a, Method::GET, "/healthzz", None), 401, "no other path");
    }

    #[test]
    fn rights_per_type_and_write_implies_read() {
        let a = access(false);
        assert_eq!(code(&a, Method::GET, LINKS, Some("r0")), 200);
        assert_eq!(code(&a, Method::GET, &format!("{LINKS}/eth0?watch=true"), Some("r0")), 200);
        assert_eq!(code(&a, Method::POST, LINKS, Some("r0")), 403);
        assert_eq!(code(&a, Method::DELETE, &format!("{LINKS}/eth0"), Some("r0")), 403);
        assert_eq!(code(&a, Method::GET, "/apis/net.cosi.dev/v1alpha1/routes", Some("r0")), 403);
        assert_eq!(code(&a, Method::POST, LINKS, Some("s3cret")), 200);
        assert_eq!(code(&a, Method::GET, "/apis/x.dev/v1/things", Some("s3cret")), 200);
        let writer = User::new("w").write(["linkconfigs"]);
        assert!(writer.can_read("linkconfigs") && !writer.can_read("routes"));
    }

    #[test]
    fn discovery_is_open_to_any_known_user() {
        let a = access(false);
        for path in ["/version", "/api", "/apis", "/apis/net.cosi.dev/v1alpha1", "/openapi/v2"] {
            assert_eq!(code(&a, Method::GET, path, Some("r0")), 200, "{path}");
            assert_eq!(code(&a, Method::GET, path, None), 401, "{path}");
            assert_eq!(code(&a, Method::GET, path, Some("nope")), 401, "{path}");
        }
        let open = access(true);
        assert_eq!(code(&open, Method::GET, "/apis", None), 200);
        assert_eq!(code(&open, Method::POST, "/version", None), 403);
    }

    #[test]
    fn anonymous_reads_only_when_allowed_and_a_bad_token_is_never_anonymous() {
        let closed = access(false);
        assert_eq!(code(&closed, Method::GET, LINKS, None), 401);
        let open = access(true);
        assert_eq!(code(&open, Method::GET, LINKS, None), 200);
        assert_eq!(code(&open, Method::POST, LINKS, None), 403);
        assert_eq!(code(&open, Method::GET, LINKS, Some("wrong")), 401);
        let basic = TestRequest::get()
            .uri(LINKS)
            .insert_header((header::AUTHORIZATION, "Basic YTpi"))
            .to_http_request();
        assert_eq!(open.authorize(&basic).unwrap_err().code(), 401);
    }

    #[test]
    fn a_403_names_user_verb_and_resource_like_the_apiserver() {
        let a = access(true);
        let req = TestRequest::delete().uri(&format!("{LINKS}/eth0")).to_http_request();
        let status = a.authorize(&req).unwrap_err();
        assert_eq!((status.code(), status.reason()), (403, "Forbidden"));
        assert_eq!(
            status.message(),
            "linkconfigs.net.cosi.dev \"eth0\" is forbidden: User \"system:anonymous\" cannot delete resource \"linkconfigs\" in API group \"net.cosi.dev\" in the namespace \"config\""
        );
        let req = TestRequest::post()
            .uri("/apis/net.cosi.dev/v1alpha1/linkconfigs")
            .insert_header((header::AUTHORIZATION, "Bearer r0"))
            .to_http_request();
        let status = a.authorize(&req).unwrap_err();
        assert!(
            status.message().contains("User \"viewer\" cannot create resource \"linkconfigs\"")
                && status.message().ends_with("at the cluster scope"),
            "{status}"
        );
    }
}
