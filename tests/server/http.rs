//! A minimal HTTP/1.1 client over std's TcpStream, enough to talk to `wgllm serve` without a client
//! library: one request per connection (`Connection: close`), chunked bodies, server-sent events
//! read as they arrive, and dropping a stream midway (a client that disconnects).
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads a chunked body, chunk by chunk, as the bytes arrive.
struct Chunked<R> {
    inner: R,
    left: usize,
    done: bool,
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        if self.left == 0 {
            let mut line = String::new();
            self.inner.read_line(&mut line)?;
            if line.trim().is_empty() {
                // the CRLF that ends the previous chunk
                line.clear();
                self.inner.read_line(&mut line)?;
            }
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| std::io::Error::other(format!("bad chunk size line {line:?}")))?;
            if size == 0 {
                self.done = true;
                return Ok(0);
            }
            self.left = size;
        }
        let n = buf.len().min(self.left);
        let got = self.inner.read(&mut buf[..n])?;
        if got == 0 {
            return Err(std::io::Error::other("connection closed inside a chunk"));
        }
        self.left -= got;
        Ok(got)
    }
}

pub struct Body {
    status: u16,
    headers: Vec<(String, String)>,
    reader: Box<dyn BufRead + Send>,
}

fn send(addr: &str, method: &str, path: &str, key: Option<&str>, body: &[u8]) -> std::io::Result<Body> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(600)))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    if let Some(k) = key {
        head.push_str(&format!("Authorization: Bearer {k}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    // a server that refuses a large body may answer and close before reading all of it
    let _ = s.write_all(body);
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let mut headers = vec![];
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let h = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.clone())
    };
    let reader: Box<dyn BufRead + Send> = if h("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        Box::new(BufReader::new(Chunked {
            inner: r,
            left: 0,
            done: false,
        }))
    } else if let Some(n) = h("content-length").and_then(|v| v.parse::<u64>().ok()) {
        Box::new(BufReader::new(r.take(n)))
    } else {
        Box::new(r)
    };
    Ok(Body {
        status,
        headers,
        reader,
    })
}

pub fn request(addr: &str, method: &str, path: &str, key: Option<&str>, body: &[u8]) -> std::io::Result<Resp> {
    let mut b = send(addr, method, path, key, body)?;
    let mut text = String::new();
    b.reader.read_to_string(&mut text)?;
    Ok(Resp {
        status: b.status,
        headers: b.headers,
        body: text,
    })
}

pub fn post(addr: &str, path: &str, key: Option<&str>, body: &serde_json::Value) -> Resp {
    request(addr, "POST", path, key, body.to_string().as_bytes()).expect("POST")
}

pub fn get(addr: &str, path: &str, key: Option<&str>) -> Resp {
    request(addr, "GET", path, key, b"").expect("GET")
}

/// A streaming response: its `data:` payloads one by one. Dropping it closes the connection.
pub struct Events {
    pub status: u16,
    body: Body,
}

impl Events {
    /// The next event's data; None at the end of the body.
    pub fn next_data(&mut self) -> Option<String> {
        let mut data = String::new();
        let mut line = String::new();
        loop {
            line.clear();
            match self.body.reader.read_line(&mut line) {
                Ok(0) | Err(_) => return (!data.is_empty()).then_some(data),
                Ok(_) => {}
            }
            let l = line.trim_end_matches(['\r', '\n']);
            if l.is_empty() {
                if !data.is_empty() {
                    return Some(data);
                }
            } else if let Some(d) = l.strip_prefix("data:") {
                data.push_str(d.strip_prefix(' ').unwrap_or(d));
            }
        }
    }

    /// The rest of the body as text (for a stream that was refused with a JSON error).
    pub fn rest(mut self) -> String {
        let mut s = String::new();
        let _ = self.body.reader.read_to_string(&mut s);
        s
    }
}

pub fn stream(addr: &str, path: &str, key: Option<&str>, body: &serde_json::Value) -> std::io::Result<Events> {
    let b = send(addr, "POST", path, key, body.to_string().as_bytes())?;
    Ok(Events {
        status: b.status,
        body: b,
    })
}
