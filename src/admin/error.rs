//! [`ApiError`]: a 4xx or 5xx answer with a JSON body that says what was wrong.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

/// An error answer of the admin endpoint: `{"error": "...", "status": 404}`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    /// 400: the request is malformed (a bad selector, namespace, id or format).
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    /// 404: no such resource, type or route.
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::NOT_FOUND, message: message.into() }
    }

    /// 405: the endpoint answers GET only.
    pub fn method_not_allowed() -> Self {
        ApiError {
            status: StatusCode::METHOD_NOT_ALLOWED,
            message: "the admin endpoint is read-only: GET only".into(),
        }
    }

    /// 429: a client over its watch limit.
    pub fn too_many_requests(message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::TOO_MANY_REQUESTS, message: message.into() }
    }

    /// 414: a query string over the limit.
    pub fn uri_too_long(message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::URI_TOO_LONG, message: message.into() }
    }

    /// 503: the runtime could not answer.
    pub fn unavailable(message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::SERVICE_UNAVAILABLE, message: message.into() }
    }

    /// 500: the answer could not be built.
    pub fn internal(message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, message: message.into() }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.status.as_u16()
    }

    /// What was wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<crate::Error> for ApiError {
    fn from(e: crate::Error) -> Self {
        if e.is_not_found() {
            ApiError::not_found(e.to_string())
        } else if matches!(e, crate::Error::InvalidInput { .. }) {
            ApiError::bad_request(e.to_string())
        } else {
            ApiError::unavailable(e.to_string())
        }
    }
}

impl From<crate::http_limits::Refused> for ApiError {
    fn from(refused: crate::http_limits::Refused) -> Self {
        match refused {
            crate::http_limits::Refused::QueryTooLong { .. } => {
                ApiError::uri_too_long(refused.to_string())
            }
            crate::http_limits::Refused::TooManyWatches { .. } => {
                ApiError::too_many_requests(refused.to_string())
            }
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status)
            .json(serde_json::json!({ "error": self.message, "status": self.status.as_u16() }))
    }
}

/// The answer to any method but GET.
pub(super) async fn not_allowed() -> Result<HttpResponse, ApiError> {
    Err(ApiError::method_not_allowed())
}
