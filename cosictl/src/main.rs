//! `cosictl`: look inside a running cosi-runtime through its admin endpoint
//! (feature `admin` of cosi-runtime).
//!
//! ```text
//! cosictl get <type> [id] [-n NAMESPACE] [-l SELECTOR] [-o table|json|yaml] [-w]
//! cosictl graph [-o dot|mermaid|svg|json]
//! cosictl controllers [-o table|json]
//! cosictl shards [-d] [-o table|json|yaml]
//! cosictl health
//! ```
//!
//! `--endpoint URL|unix:PATH` (or `COSICTL_ENDPOINT`) says where the endpoint
//! listens; the default is `http://127.0.0.1:8081`. `--timeout SECS` (or
//! `COSICTL_TIMEOUT`, default 10) bounds how long the endpoint may stay
//! silent: connecting, and between two reads of an answer (a watch may stay
//! quiet longer: the endpoint keeps it alive, and one silent for 45 s is
//! given up). Exit status 1 with a message on stderr when the endpoint is
//! unreachable, silent, or answers an error.

mod failure;
mod http;
mod output;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::Value;

use failure::Failure;
use http::{Endpoint, HttpError, encode, get_json, get_ok};
use output::{Format, Table};

#[derive(Parser, Debug)]
#[command(
    name = "cosictl",
    version,
    about = "Look inside a running cosi-runtime through its admin endpoint"
)]
struct Cli {
    /// The admin endpoint: http://HOST:PORT[/PREFIX] or unix:PATH.
    #[arg(long, global = true, env = "COSICTL_ENDPOINT", default_value = "http://127.0.0.1:8081")]
    endpoint: Endpoint,
    /// Seconds the endpoint may stay silent (connecting, or within an answer).
    #[arg(long, global = true, env = "COSICTL_TIMEOUT", default_value_t = 10.0, value_parser = seconds)]
    timeout: f64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Resources of a type (the full type, or its first segment in any case).
    Get {
        /// The resource type, e.g. `Links.net.cosi.dev` or `links`.
        #[arg(value_name = "TYPE")]
        resource_type: String,
        /// One resource.
        id: Option<String>,
        /// The namespace (default: every namespace the type is read from).
        #[arg(short, long)]
        namespace: Option<String>,
        /// A label selector: `key`, `!key`, `key=value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`.
        #[arg(short = 'l', long = "selector")]
        selector: Option<String>,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = Format::Table)]
        output: Format,
        /// Keep watching: `+` marks created rows, `-` destroyed ones.
        #[arg(short, long)]
        watch: bool,
    },
    /// The dependency graph of the controllers.
    Graph {
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = GraphFormat::Dot)]
        output: GraphFormat,
    },
    /// Every controller with its status and counters.
    Controllers {
        /// Output format (table or json).
        #[arg(short, long, value_enum, default_value_t = Format::Table)]
        output: Format,
    },
    /// The sharded controllers of the process: the ring, and what it owns.
    Shards {
        /// Also one line per owned shard: its fencing token, keys, draining.
        #[arg(short, long)]
        detail: bool,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = Format::Table)]
        output: Format,
    },
    /// The readiness checks, one line each; exit status 1 when not ready.
    Health,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum GraphFormat {
    Dot,
    Mermaid,
    Svg,
    Json,
}

/// A positive, finite number of seconds.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 => Ok(secs),
        _ => Err(format!("{s:?} is not a number of seconds between 0 and 86400")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    http::set_timeout(std::time::Duration::from_secs_f64(cli.timeout));
    let result = match cli.command {
        Command::Get { resource_type, id, namespace, selector, output, watch } => {
            let query = Query { resource_type, id, namespace, selector };
            if watch {
                watch_resources(&cli.endpoint, &query, output)
            } else {
                get(&cli.endpoint, &query, output)
            }
        }
        Command::Graph { output } => graph(&cli.endpoint, output),
        Command::Controllers { output } => controllers(&cli.endpoint, output),
        Command::Shards { detail, output } => shards(&cli.endpoint, detail, output),
        Command::Health => health(&cli.endpoint),
    };
    match result {
        Ok(code) => code,
        Err(Failure(message)) => {
            eprintln!("cosictl: {message}");
            ExitCode::FAILURE
        }
    }
}

struct Query {
    resource_type: String,
    id: Option<String>,
    namespace: Option<String>,
    selector: Option<String>,
}

/// Whether `known` is the type written as `written` (the server's rule).
fn same_type(known: &str, written: &str) -> bool {
    known == written
        || known.eq_ignore_ascii_case(written)
        || known.split('.').next().is_some_and(|first| first.eq_ignore_ascii_case(written))
}

/// The namespaces to look in: `-n`, or every namespace the type is read from.
fn namespaces(endpoint: &Endpoint, query: &Query) -> Result<Vec<String>, Failure> {
    if let Some(ns) = &query.namespace {
        return Ok(vec![ns.clone()]);
    }
    let types = get_json(endpoint, "/api/v1/types")?;
    let matching: Vec<&Value> = types
        .as_array()
        .map(|all| {
            let exact: Vec<&Value> =
                all.iter().filter(|t| t["type"].as_str() == Some(&query.resource_type)).collect();
            if exact.is_empty() {
                all.iter()
                    .filter(|t| {
                        t["type"].as_str().is_some_and(|k| same_type(k, &query.resource_type))
                    })
                    .collect()
            } else {
                exact
            }
        })
        .unwrap_or_default();
    let [one] = matching.as_slice() else {
        // Unknown or ambiguous: the server says which, with the known types.
        let path = format!("/api/v1/resources/default/{}", encode(&query.resource_type));
        get_ok(endpoint, &path)?;
        return Err(Failure(format!(
            "no namespace known for {}: give one with -n",
            query.resource_type
        )));
    };
    let namespaces: Vec<String> = one["namespaces"]
        .as_array()
        .map(|all| all.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    if namespaces.is_empty() {
        return Err(Failure(format!(
            "no namespace known for {} (no controller reads it): give one with -n",
            one["type"].as_str().unwrap_or(&query.resource_type)
        )));
    }
    Ok(namespaces)
}

fn selector_query(query: &Query) -> String {
    query.selector.as_ref().map(|s| format!("?labels={}", encode(s))).unwrap_or_default()
}

fn get(endpoint: &Endpoint, query: &Query, format: Format) -> Result<ExitCode, Failure> {
    let namespaces = namespaces(endpoint, query)?;
    let kind = encode(&query.resource_type);
    let mut resources = Vec::new();
    let mut last_error = None;
    for ns in &namespaces {
        let path = match &query.id {
            Some(id) => format!("/api/v1/resources/{}/{kind}/{}", encode(ns), encode(id)),
            None => format!("/api/v1/resources/{}/{kind}{}", encode(ns), selector_query(query)),
        };
        match get_json(endpoint, &path) {
            Ok(Value::Array(items)) => resources.extend(items),
            Ok(one) => resources.push(one),
            // One resource may live in any of the namespaces.
            Err(HttpError::Status(404, message)) if query.id.is_some() && namespaces.len() > 1 => {
                last_error = Some(HttpError::Status(404, message));
            }
            Err(e) => return Err(e.into()),
        }
    }
    if let (Some(e), true) = (last_error, resources.is_empty()) {
        return Err(e.into());
    }
    let single = query.id.is_some() && resources.len() == 1;
    let mut out = std::io::stdout().lock();
    match format {
        Format::Table => {
            let mut table = Table::new(&["NAMESPACE", "TYPE", "ID", "VERSION"]);
            for r in &resources {
                table.row(output::resource_row(r));
            }
            table.write_all(&mut out)?;
        }
        Format::Json if single => writeln!(out, "{}", output::pretty(&resources[0]))?,
        Format::Json => writeln!(out, "{}", output::pretty(&Value::Array(resources)))?,
        Format::Yaml => {
            for (i, r) in resources.iter().enumerate() {
                if i > 0 {
                    writeln!(out, "---")?;
                }
                write!(out, "{}", output::yaml(r)?)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn watch_resources(
    endpoint: &Endpoint,
    query: &Query,
    format: Format,
) -> Result<ExitCode, Failure> {
    let namespaces = namespaces(endpoint, query)?;
    let [ns] = namespaces.as_slice() else {
        return Err(Failure(format!(
            "{} is read from several namespaces ({}): watch one, with -n",
            query.resource_type,
            namespaces.join(", ")
        )));
    };
    let kind = encode(&query.resource_type);
    let path = match &query.id {
        Some(id) => format!("/api/v1/watch/{}/{kind}/{}", encode(ns), encode(id)),
        None => format!("/api/v1/watch/{}/{kind}{}", encode(ns), selector_query(query)),
    };
    let mut answer = get_ok(endpoint, &path)?;
    answer.idle_timeout(http::WATCH_IDLE.max(http::timeout()))?;
    let mut out = std::io::stdout().lock();
    let mut table = Table::new(&["*", "NAMESPACE", "TYPE", "ID", "VERSION"]);
    let mut bootstrapped = false;
    let (mut event, mut data) = (String::new(), String::new());
    while let Some(line) = answer.line()? {
        if let Some(v) = line.strip_prefix("event: ") {
            event = v.to_owned();
        } else if let Some(v) = line.strip_prefix("data: ") {
            data = v.to_owned();
        } else if line.is_empty() && !event.is_empty() {
            let payload: Value = serde_json::from_str(&data)
                .map_err(|e| Failure(format!("bad event from the admin endpoint: {e}")))?;
            match event.as_str() {
                "error" => {
                    let why = payload["error"].as_str().unwrap_or("unknown error");
                    return Err(Failure(format!("the watch ended: {why}")));
                }
                // The server stops: its state may not be there when it is back.
                "stopping" => {
                    let why = payload["reason"].as_str().unwrap_or("the server is stopping");
                    return Err(Failure(format!("the watch ended: {why}")));
                }
                _ => {}
            }
            match format {
                Format::Table => {
                    if event == "bootstrapped" {
                        bootstrapped = true;
                        table.write_all(&mut out)?;
                    } else {
                        let mark = match event.as_str() {
                            "created" => "+",
                            "destroyed" => "-",
                            _ => " ",
                        };
                        let mut row = vec![mark.to_owned()];
                        row.extend(output::resource_row(&payload));
                        if bootstrapped {
                            table.write_row(&mut out, &row)?;
                        } else {
                            table.row(row);
                        }
                    }
                }
                Format::Json => {
                    let line = serde_json::json!({ "event": event, "resource": payload });
                    writeln!(out, "{line}")?;
                }
                Format::Yaml => {
                    let doc = serde_json::json!({ "event": event, "resource": payload });
                    write!(out, "---\n{}", output::yaml(&doc)?)?;
                }
            }
            out.flush()?;
            event.clear();
            data.clear();
        }
    }
    Err(Failure("the admin endpoint closed the watch".into()))
}

fn graph(endpoint: &Endpoint, format: GraphFormat) -> Result<ExitCode, Failure> {
    let name = match format {
        GraphFormat::Dot => "dot",
        GraphFormat::Mermaid => "mermaid",
        GraphFormat::Svg => "svg",
        GraphFormat::Json => "json",
    };
    let body = get_ok(endpoint, &format!("/api/v1/graph?format={name}"))?.text()?;
    let mut out = std::io::stdout().lock();
    write!(out, "{body}")?;
    if !body.ends_with('\n') {
        writeln!(out)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn controllers(endpoint: &Endpoint, format: Format) -> Result<ExitCode, Failure> {
    let all = get_json(endpoint, "/api/v1/controllers")?;
    let mut out = std::io::stdout().lock();
    match format {
        Format::Table => {
            let mut table = Table::new(&[
                "CONTROLLER",
                "STATUS",
                "RECONCILES",
                "ERRORS",
                "PANICS",
                "RESTARTS",
                "RETRIES",
                "QUEUED",
                "LAST ERROR",
            ]);
            for c in all.as_array().into_iter().flatten() {
                table.row(output::controller_row(c));
            }
            table.write_all(&mut out)?;
        }
        Format::Json => writeln!(out, "{}", output::pretty(&all))?,
        Format::Yaml => write!(out, "{}", output::yaml(&all)?)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn shards(endpoint: &Endpoint, detail: bool, format: Format) -> Result<ExitCode, Failure> {
    let all = get_json(endpoint, "/api/v1/shards")?;
    let mut out = std::io::stdout().lock();
    match format {
        Format::Table => {
            let controllers = all.as_array().map(Vec::as_slice).unwrap_or_default();
            output::shard_tables(controllers, detail, &mut out)?;
        }
        Format::Json => writeln!(out, "{}", output::pretty(&all))?,
        Format::Yaml => write!(out, "{}", output::yaml(&all)?)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn health(endpoint: &Endpoint) -> Result<ExitCode, Failure> {
    let answer = http::get(endpoint, "/readyz?verbose")?;
    let status = answer.status;
    let body = answer.text()?;
    match status {
        200 | 503 => {
            println!("{}", body.trim_end());
            Ok(if status == 200 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        other => Err(Failure(format!("the admin endpoint answered HTTP {other}: {body}"))),
    }
}
