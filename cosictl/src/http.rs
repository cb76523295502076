//! A minimal blocking HTTP/1.1 client for the admin endpoint: GET over TCP or
//! a unix socket, chunked or plain bodies, read whole or line by line.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::OnceLock;
use std::time::Duration;

/// How long the endpoint may stay silent: connecting, and between any two
/// reads of an answer. Set once by [`set_timeout`]; [`DEFAULT_TIMEOUT`] otherwise.
static TIMEOUT: OnceLock<Duration> = OnceLock::new();

/// The default of `--timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The admin watch route sends a keep-alive comment at least this often
/// (15 s) on a quiet watch; a watch silent for longer than this is dead.
pub const WATCH_IDLE: Duration = Duration::from_secs(45);

/// Sets the timeout of every later request (`--timeout`).
pub fn set_timeout(timeout: Duration) {
    let _ = TIMEOUT.set(timeout);
}

/// The timeout in force.
pub fn timeout() -> Duration {
    *TIMEOUT.get().unwrap_or(&DEFAULT_TIMEOUT)
}

/// Where the admin endpoint listens: `http://HOST:PORT[/PREFIX]` or `unix:PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A TCP address and a path prefix (empty, or `/admin` when mounted there).
    Tcp { authority: String, prefix: String },
    /// A unix socket.
    Unix(std::path::PathBuf),
}

impl std::str::FromStr for Endpoint {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err("unix: needs a socket path".into());
            }
            return Ok(Endpoint::Unix(path.into()));
        }
        if s.starts_with("https://") {
            return Err(
                "https is not supported: the admin endpoint serves plain HTTP on loopback".into()
            );
        }
        let rest = s.strip_prefix("http://").unwrap_or(s);
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if authority.is_empty() || !authority.contains(':') {
            return Err(format!("{s:?} is not http://HOST:PORT or unix:PATH"));
        }
        Ok(Endpoint::Tcp { authority: authority.to_owned(), prefix: prefix.to_owned() })
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp { authority, prefix } => write!(f, "http://{authority}{prefix}"),
            Endpoint::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// What can go wrong talking to the endpoint.
#[derive(Debug)]
pub enum HttpError {
    /// The endpoint could not be reached.
    Unreachable(Endpoint, io::Error),
    /// The connection broke or the answer was not HTTP.
    Protocol(String),
    /// The endpoint answered with an error status.
    Status(u16, String),
    /// The endpoint accepted the connection, or started an answer, and then
    /// said nothing for longer than the timeout.
    TimedOut(Duration),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Unreachable(endpoint, e) => {
                write!(f, "cannot reach the admin endpoint at {endpoint}: {e}")
            }
            HttpError::Protocol(why) => write!(f, "bad answer from the admin endpoint: {why}"),
            HttpError::Status(status, message) => write!(f, "{message} (HTTP {status})"),
            HttpError::TimedOut(after) => write!(
                f,
                "the admin endpoint did not answer within {}s (it accepted the connection, \
                 or began an answer, then went silent); give it longer with --timeout SECS",
                after.as_secs_f64()
            ),
        }
    }
}

impl From<io::Error> for HttpError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            // What a read or write past its socket timeout returns (unix
            // says WouldBlock, windows TimedOut).
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => HttpError::TimedOut(timeout()),
            _ => HttpError::Protocol(e.to_string()),
        }
    }
}

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// An answer whose status and headers are read; the body is `reader`.
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    reader: Box<dyn BufRead + Send>,
    /// Sets the read timeout of the connection under `reader`.
    read_timeout: Box<dyn Fn(Duration) -> io::Result<()> + Send>,
}

impl Answer {
    /// Lets the rest of the body be silent for up to `idle` between reads (a
    /// watch: quiet for as long as nothing changes, kept alive by the server).
    pub fn idle_timeout(&self, idle: Duration) -> Result<(), HttpError> {
        Ok((self.read_timeout)(idle)?)
    }

    /// The whole body as text.
    pub fn text(mut self) -> Result<String, HttpError> {
        let mut body = String::new();
        self.reader.read_to_string(&mut body)?;
        Ok(body)
    }

    /// The next line of the body, without its end; `None` at the end.
    pub fn line(&mut self) -> Result<Option<String>, HttpError> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        Ok(Some(line.trim_end_matches(['\r', '\n']).to_owned()))
    }
}

/// Decodes a chunked body.
struct Chunked<R> {
    inner: R,
    left: usize,
    done: bool,
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut line = String::new();
            if self.inner.read_line(&mut line)? == 0 {
                self.done = true;
                return Ok(0);
            }
            let size = line.trim().split(';').next().unwrap_or("");
            self.left = usize::from_str_radix(size, 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let want = self.left.min(buf.len());
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the body ended inside a chunk",
            ));
        }
        self.left -= n;
        if self.left == 0 {
            let mut crlf = String::new();
            self.inner.read_line(&mut crlf)?;
        }
        Ok(n)
    }
}

/// A connection, and a way to change its read timeout once it is boxed.
type Connection = (Box<dyn Stream>, Box<dyn Fn(Duration) -> io::Result<()> + Send>);

fn connect(endpoint: &Endpoint) -> Result<Connection, HttpError> {
    let unreachable = |e| HttpError::Unreachable(endpoint.clone(), e);
    let limit = timeout();
    match endpoint {
        Endpoint::Tcp { authority, .. } => {
            let stream = connect_tcp(authority, limit).map_err(unreachable)?;
            stream.set_write_timeout(Some(limit))?;
            stream.set_read_timeout(Some(limit))?;
            let handle = stream.try_clone()?;
            Ok((Box::new(stream), Box::new(move |d| handle.set_read_timeout(Some(d)))))
        }
        #[cfg(unix)]
        Endpoint::Unix(path) => {
            let stream = std::os::unix::net::UnixStream::connect(path).map_err(unreachable)?;
            stream.set_write_timeout(Some(limit))?;
            stream.set_read_timeout(Some(limit))?;
            let handle = stream.try_clone()?;
            Ok((Box::new(stream), Box::new(move |d| handle.set_read_timeout(Some(d)))))
        }
        #[cfg(not(unix))]
        Endpoint::Unix(_) => Err(unreachable(io::Error::new(
            io::ErrorKind::Unsupported,
            "unix sockets need a unix system",
        ))),
    }
}

/// Connects to the first address of `authority` that answers within `limit`.
fn connect_tcp(authority: &str, limit: Duration) -> io::Result<TcpStream> {
    let mut last = None;
    for addr in authority.to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, limit) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::NotFound, format!("{authority} resolves to no address"))
    }))
}

/// Sends `GET path` and reads the status and headers.
///
/// # Errors
/// [`HttpError::Unreachable`] when nothing listens, [`HttpError::Protocol`]
/// on a broken answer. An error status is returned as an `Answer`.
pub fn get(endpoint: &Endpoint, path: &str) -> Result<Answer, HttpError> {
    let (mut stream, read_timeout) = connect(endpoint)?;
    let (host, prefix) = match endpoint {
        Endpoint::Tcp { authority, prefix } => (authority.as_str(), prefix.as_str()),
        Endpoint::Unix(_) => ("localhost", ""),
    };
    write!(
        stream,
        "GET {prefix}{path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: cosictl\r\nConnection: close\r\n\r\n"
    )?;
    stream.flush()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| HttpError::Protocol(format!("not an HTTP status line: {line:?}")))?;
    let (mut chunked, mut content_type) = (false, String::new());
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(HttpError::Protocol("the headers ended early".into()));
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked") {
                chunked = true;
            } else if name.eq_ignore_ascii_case("content-type") {
                content_type = value.to_owned();
            }
        }
    }
    let reader: Box<dyn BufRead + Send> = if chunked {
        Box::new(BufReader::new(Chunked { inner: reader, left: 0, done: false }))
    } else {
        Box::new(reader)
    };
    Ok(Answer { status, content_type, reader, read_timeout })
}

/// `GET path`, failing on an error status with the server's message.
///
/// # Errors
/// As [`get`], and [`HttpError::Status`] for a status of 400 or more.
pub fn get_ok(endpoint: &Endpoint, path: &str) -> Result<Answer, HttpError> {
    let answer = get(endpoint, path)?;
    if answer.status < 400 {
        return Ok(answer);
    }
    let status = answer.status;
    let json = answer.content_type.starts_with("application/json");
    let body = answer.text()?;
    let message = json
        .then(|| serde_json::from_str::<serde_json::Value>(&body).ok())
        .flatten()
        .and_then(|v| v["error"].as_str().map(str::to_owned))
        .unwrap_or(body);
    Err(HttpError::Status(status, message))
}

/// `GET path` as JSON.
///
/// # Errors
/// As [`get_ok`], and [`HttpError::Protocol`] when the body is not JSON.
pub fn get_json(endpoint: &Endpoint, path: &str) -> Result<serde_json::Value, HttpError> {
    let body = get_ok(endpoint, path)?.text()?;
    serde_json::from_str(&body).map_err(|e| HttpError::Protocol(format!("not JSON: {e}")))
}

/// Percent-encodes a query value or a path segment.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
