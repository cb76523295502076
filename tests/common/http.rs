//! A small async HTTP/1.1 client for the admin endpoint tests: real requests
//! over loopback TCP, chunked bodies, server-sent events. Part of the `admin`
//! and `kubernetes` test binaries (`#[path = "../common/http.rs"] mod http;`).

use std::net::SocketAddr;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// An answer.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// A response being read: status and headers read, body pending.
pub struct Open {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
    chunked: bool,
    /// Bytes left in the current chunk.
    left: usize,
    done: bool,
    pending: Vec<u8>,
}

async fn send(addr: SocketAddr, method: &str, path: &str) -> Open {
    send_with(addr, method, path, &[]).await
}

async fn send_with(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Open {
    let mut stream = TcpStream::connect(addr).await.expect("connect to the admin endpoint");
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\n{extra}\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).await.unwrap();
    let status: u16 = line.split_whitespace().nth(1).expect("a status line").parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await.unwrap();
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (k, v) = header.split_once(':').unwrap();
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    Open { status, headers, reader, chunked, left: 0, done: false, pending: Vec::new() }
}

impl Open {
    /// The next piece of the body; `None` at its end.
    pub async fn chunk(&mut self) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        if !self.chunked {
            let mut buf = vec![0; 16 * 1024];
            let n = self.reader.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                self.done = true;
                return None;
            }
            buf.truncate(n);
            return Some(buf);
        }
        if self.left == 0 {
            let mut line = String::new();
            if self.reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                self.done = true;
                return None;
            }
            let size = usize::from_str_radix(line.trim(), 16).expect("a chunk size");
            if size == 0 {
                self.done = true;
                return None;
            }
            self.left = size;
        }
        let mut buf = vec![0; self.left.min(16 * 1024)];
        let n = self.reader.read(&mut buf).await.unwrap();
        assert!(n > 0, "the connection closed inside a chunk");
        buf.truncate(n);
        self.left -= n;
        if self.left == 0 {
            let mut crlf = String::new();
            self.reader.read_line(&mut crlf).await.unwrap();
        }
        Some(buf)
    }

    pub async fn body(mut self) -> Response {
        let mut body = Vec::new();
        while let Some(chunk) = self.chunk().await {
            body.extend(chunk);
        }
        Response {
            status: self.status,
            headers: self.headers,
            body: String::from_utf8(body).unwrap(),
        }
    }

    /// The next server-sent event, comments skipped; `None` at the end.
    pub async fn event(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.pending.windows(2).position(|w| w == b"\n\n") {
                let raw: Vec<u8> = self.pending.drain(..end + 2).collect();
                let text = String::from_utf8(raw).unwrap();
                let mut event = Event::default();
                for line in text.lines() {
                    if let Some(v) = line.strip_prefix("event: ") {
                        event.event = v.to_owned();
                    } else if line == "id" || line.starts_with("id:") {
                        // As an `EventSource` reads it: an empty id clears the last one.
                        let v = &line["id".len()..];
                        let v = v.strip_prefix(':').unwrap_or(v);
                        event.id = Some(v.strip_prefix(' ').unwrap_or(v).to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        event.data = serde_json::from_str(v).unwrap();
                    }
                }
                if event.event.is_empty() {
                    continue; // a comment
                }
                return Some(event);
            }
            let chunk = self.chunk().await?;
            self.pending.extend(chunk);
        }
    }
}

/// One server-sent event.
#[derive(Debug, Default)]
pub struct Event {
    pub event: String,
    pub id: Option<String>,
    pub data: serde_json::Value,
}

impl Event {
    /// The id of the resource it carries.
    pub fn resource_id(&self) -> &str {
        self.data["metadata"]["id"].as_str().unwrap_or("")
    }
}

pub async fn get(addr: SocketAddr, path: &str) -> Response {
    send(addr, "GET", path).await.body().await
}

pub async fn request(addr: SocketAddr, method: &str, path: &str) -> Response {
    send(addr, method, path).await.body().await
}

pub async fn open(addr: SocketAddr, path: &str) -> Open {
    send(addr, "GET", path).await
}

/// [`open`] with extra request headers.
pub async fn open_with(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Open {
    send_with(addr, "GET", path, headers).await
}
