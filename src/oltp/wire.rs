//! A minimal blocking PostgreSQL wire-protocol client for the insert hot path.
//!
//! Why not the `postgres` crate here: its sync client drives tokio-postgres through a
//! runtime, a channel and epoll on every statement, which on a 2-vCPU box cost the client
//! 1.5–3× the CPU per insert that libpq (pgbench) needs, and client CPU is taken from the
//! server sharing those CPUs. This client does what libpq does for a prepared INSERT: one
//! `write` of a pre-encoded Bind/Execute/Sync (the keys patched in place, no allocation)
//! and one blocking `read` of BindComplete/CommandComplete/ReadyForQuery.
//!
//! Scope: protocol 3.0 over a Unix socket or TCP without TLS; authentication trust,
//! cleartext, MD5 and SCRAM-SHA-256 (the crypto from `postgres-protocol`). Connection
//! strings are parsed by the `postgres` crate, which also serves the administrative
//! connections (table setup, counts).

use anyhow::{Context, Result, anyhow, bail};
use postgres::config::Host;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A binary parameter of the prepared INSERT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// `int4`, 4 bytes.
    Int4,
    /// `int8`, 8 bytes.
    Int8,
}

impl ParamType {
    fn oid(self) -> u32 {
        match self {
            ParamType::Int4 => 23,
            ParamType::Int8 => 20,
        }
    }
    fn len(self) -> usize {
        match self {
            ParamType::Int4 => 4,
            ParamType::Int8 => 8,
        }
    }
}

/// One connection.
pub struct WireConn {
    stream: Stream,
    /// Receive buffer and the unparsed range in it.
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    /// Pre-encoded Bind/Execute/Sync of the prepared statement.
    exec: Vec<u8>,
    /// Offsets of each parameter's value bytes inside `exec`.
    param_at: Vec<(usize, ParamType)>,
    backend_pid: i32,
}

/// A parsed backend message: type byte and body range in `rbuf`.
struct Msg {
    tag: u8,
    start: usize,
    end: usize,
}

fn put_i32(b: &mut Vec<u8>, v: i32) {
    b.extend_from_slice(&v.to_be_bytes());
}

fn put_i16(b: &mut Vec<u8>, v: i16) {
    b.extend_from_slice(&v.to_be_bytes());
}

fn put_cstr(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(s.as_bytes());
    b.push(0);
}

/// Starts a message `tag`; returns the offset of its length field for [`finish`].
fn begin(b: &mut Vec<u8>, tag: u8) -> usize {
    b.push(tag);
    let at = b.len();
    put_i32(b, 0);
    at
}

fn finish(b: &mut [u8], at: usize) {
    let len = (b.len() - at) as i32;
    b[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

impl WireConn {
    /// Connects and authenticates with the settings of `config` (hosts tried in order),
    /// giving up after `timeout`.
    pub fn connect(config: &postgres::Config, timeout: Duration) -> Result<WireConn> {
        let deadline = Instant::now() + timeout;
        let ports = config.get_ports();
        let mut last_err = anyhow!("no host in the connection string");
        for (i, host) in config.get_hosts().iter().enumerate() {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            let left = deadline.saturating_duration_since(Instant::now());
            let stream = match host {
                Host::Unix(dir) => UnixStream::connect(dir.join(format!(".s.PGSQL.{port}")))
                    .map(Stream::Unix)
                    .with_context(|| format!("socket {}", dir.display())),
                Host::Tcp(name) => tcp_connect(name, port, left),
            };
            match stream {
                Ok(s) => {
                    let mut c = WireConn {
                        stream: s,
                        rbuf: vec![0; 64 * 1024],
                        rstart: 0,
                        rend: 0,
                        exec: Vec::new(),
                        param_at: Vec::new(),
                        backend_pid: 0,
                    };
                    c.stream
                        .set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
                    c.startup(config)?;
                    c.stream.set_read_timeout(None)?;
                    return Ok(c);
                }
                Err(e) => last_err = e,
            }
        }
        Err(last_err)
    }

    /// The server process serving this connection (from BackendKeyData).
    pub fn backend_pid(&self) -> i32 {
        self.backend_pid
    }

    fn startup(&mut self, config: &postgres::Config) -> Result<()> {
        let user = config
            .get_user()
            .map(str::to_string)
            .or_else(|| std::env::var("PGUSER").ok())
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "postgres".into());
        let mut b = Vec::with_capacity(128);
        put_i32(&mut b, 0);
        put_i32(&mut b, 196_608); // protocol 3.0
        put_cstr(&mut b, "user");
        put_cstr(&mut b, &user);
        if let Some(db) = config.get_dbname() {
            put_cstr(&mut b, "database");
            put_cstr(&mut b, db);
        }
        put_cstr(&mut b, "application_name");
        put_cstr(&mut b, "smtlab");
        b.push(0);
        let len = b.len() as i32;
        b[..4].copy_from_slice(&len.to_be_bytes());
        self.send(&b)?;
        let password = config.get_password().map(<[u8]>::to_vec);
        let mut scram: Option<postgres_protocol::authentication::sasl::ScramSha256> = None;
        loop {
            let m = self.next_msg()?;
            match m.tag {
                b'R' => {
                    let body = &self.rbuf[m.start..m.end];
                    let code = i32::from_be_bytes(body[..4].try_into().expect("4 bytes"));
                    let data = body[4..].to_vec();
                    let need_pw = || {
                        password.clone().ok_or_else(|| {
                            anyhow!("the server asks for a password and none was given")
                        })
                    };
                    match code {
                        0 => {}
                        3 => {
                            let pw = need_pw()?;
                            let mut out = Vec::new();
                            let at = begin(&mut out, b'p');
                            out.extend_from_slice(&pw);
                            out.push(0);
                            finish(&mut out, at);
                            self.send(&out)?;
                        }
                        5 => {
                            let pw = need_pw()?;
                            let salt: [u8; 4] = data[..4].try_into().context("MD5 salt")?;
                            let h = postgres_protocol::authentication::md5_hash(
                                user.as_bytes(),
                                &pw,
                                salt,
                            );
                            let mut out = Vec::new();
                            let at = begin(&mut out, b'p');
                            put_cstr(&mut out, &h);
                            finish(&mut out, at);
                            self.send(&out)?;
                        }
                        10 => {
                            let pw = need_pw()?;
                            let mechs = String::from_utf8_lossy(&data).to_string();
                            if !mechs.split('\0').any(|x| x == "SCRAM-SHA-256") {
                                bail!("unsupported SASL mechanisms: {mechs}");
                            }
                            let s = postgres_protocol::authentication::sasl::ScramSha256::new(
                                &pw,
                                postgres_protocol::authentication::sasl::ChannelBinding::unsupported(),
                            );
                            let mut out = Vec::new();
                            let at = begin(&mut out, b'p');
                            put_cstr(&mut out, "SCRAM-SHA-256");
                            put_i32(&mut out, s.message().len() as i32);
                            out.extend_from_slice(s.message());
                            finish(&mut out, at);
                            self.send(&out)?;
                            scram = Some(s);
                        }
                        11 => {
                            let s = scram.as_mut().ok_or_else(|| anyhow!("SASL out of order"))?;
                            s.update(&data).context("SCRAM exchange")?;
                            let mut out = Vec::new();
                            let at = begin(&mut out, b'p');
                            out.extend_from_slice(s.message());
                            finish(&mut out, at);
                            self.send(&out)?;
                        }
                        12 => {
                            let s = scram.as_mut().ok_or_else(|| anyhow!("SASL out of order"))?;
                            s.finish(&data).context("SCRAM server signature")?;
                        }
                        other => bail!("unsupported authentication request {other}"),
                    }
                }
                b'K' => {
                    let body = &self.rbuf[m.start..m.end];
                    self.backend_pid = i32::from_be_bytes(body[..4].try_into().expect("4 bytes"));
                }
                b'Z' => return Ok(()),
                b'E' => bail!("{}", self.error_text(&m)),
                _ => {} // ParameterStatus, NoticeResponse
            }
        }
    }

    /// Runs `sql` with the simple query protocol (several statements allowed); returns
    /// the first column of the first row, if any, as text.
    pub fn simple(&mut self, sql: &str) -> Result<Option<String>> {
        let mut b = Vec::with_capacity(sql.len() + 8);
        let at = begin(&mut b, b'Q');
        put_cstr(&mut b, sql);
        finish(&mut b, at);
        self.send(&b)?;
        let mut first: Option<String> = None;
        let mut err: Option<String> = None;
        loop {
            let m = self.next_msg()?;
            match m.tag {
                b'D' if first.is_none() => {
                    let body = &self.rbuf[m.start..m.end];
                    let n = i16::from_be_bytes([body[0], body[1]]);
                    if n > 0 {
                        let len = i32::from_be_bytes(body[2..6].try_into().expect("4 bytes"));
                        if len >= 0 {
                            first = Some(
                                String::from_utf8_lossy(&body[6..6 + len as usize]).to_string(),
                            );
                        }
                    }
                }
                b'E' => err = Some(self.error_text(&m)),
                b'Z' => break,
                _ => {}
            }
        }
        match err {
            Some(e) => Err(anyhow!(e)),
            None => Ok(first),
        }
    }

    /// Prepares `sql` as the unnamed-portal statement `s` with binary parameters of
    /// `types`, and pre-encodes its Bind/Execute/Sync.
    pub fn prepare(&mut self, sql: &str, types: &[ParamType]) -> Result<()> {
        let mut b = Vec::new();
        let at = begin(&mut b, b'P');
        put_cstr(&mut b, "s");
        put_cstr(&mut b, sql);
        put_i16(&mut b, types.len() as i16);
        for t in types {
            put_i32(&mut b, t.oid() as i32);
        }
        finish(&mut b, at);
        let at = begin(&mut b, b'S');
        finish(&mut b, at);
        self.send(&b)?;
        let mut err = None;
        loop {
            let m = self.next_msg()?;
            match m.tag {
                b'E' => err = Some(self.error_text(&m)),
                b'Z' => break,
                _ => {}
            }
        }
        if let Some(e) = err {
            bail!("preparing `{sql}`: {e}");
        }
        // Bind: portal "", statement "s", all parameters binary, results in text.
        let mut e = Vec::with_capacity(64 + types.len() * 12);
        let at = begin(&mut e, b'B');
        put_cstr(&mut e, "");
        put_cstr(&mut e, "s");
        put_i16(&mut e, 1);
        put_i16(&mut e, 1);
        put_i16(&mut e, types.len() as i16);
        let mut param_at = Vec::with_capacity(types.len());
        for t in types {
            put_i32(&mut e, t.len() as i32);
            param_at.push((e.len(), *t));
            e.extend(std::iter::repeat_n(0u8, t.len()));
        }
        put_i16(&mut e, 0);
        finish(&mut e, at);
        let at = begin(&mut e, b'E');
        put_cstr(&mut e, "");
        put_i32(&mut e, 0);
        finish(&mut e, at);
        let at = begin(&mut e, b'S');
        finish(&mut e, at);
        self.exec = e;
        self.param_at = param_at;
        Ok(())
    }

    /// Sets parameter `i` (0-based) of the next [`Self::execute`].
    #[inline]
    pub fn set_param(&mut self, i: usize, v: i64) {
        let (at, t) = self.param_at[i];
        match t {
            ParamType::Int8 => self.exec[at..at + 8].copy_from_slice(&v.to_be_bytes()),
            ParamType::Int4 => self.exec[at..at + 4].copy_from_slice(&(v as i32).to_be_bytes()),
        }
    }

    /// Executes the prepared statement in its own implicit transaction (committed at
    /// Sync); returns the affected rows.
    #[inline]
    pub fn execute(&mut self) -> Result<u64> {
        if let Err(e) = self.stream.write_all(&self.exec) {
            return Err(self.write_failed(e));
        }
        let mut rows = 0;
        let mut err = None;
        loop {
            let m = self.next_msg()?;
            match m.tag {
                b'C' => rows = command_rows(&self.rbuf[m.start..m.end]),
                b'E' => err = Some(self.error_text(&m)),
                b'Z' => break,
                _ => {}
            }
        }
        match err {
            Some(e) => Err(anyhow!(e)),
            None => Ok(rows),
        }
    }

    /// Writes a whole message; errors as text (see [`Self::write_failed`]).
    fn send(&mut self, b: &[u8]) -> Result<()> {
        self.stream
            .write_all(b)
            .map_err(|e| io_text("writing to", &e))
    }

    /// A write failed (the server closed the connection): the server's last word (a FATAL
    /// ErrorResponse is usually waiting in the socket) or the I/O error, as text only, so
    /// no `io::Error` of kind BrokenPipe reaches the binary (which treats that as a closed
    /// stdout and exits quietly).
    fn write_failed(&mut self, e: std::io::Error) -> anyhow::Error {
        if let Ok(m) = self.next_msg()
            && m.tag == b'E'
        {
            return anyhow!("{}", self.error_text(&m));
        }
        io_text("writing to", &e)
    }

    /// Reads the next complete message, refilling the buffer as needed.
    fn next_msg(&mut self) -> Result<Msg> {
        loop {
            let avail = self.rend - self.rstart;
            if avail >= 5 {
                let h = &self.rbuf[self.rstart..self.rstart + 5];
                let len = i32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
                if len < 4 {
                    bail!("malformed message from the server");
                }
                if avail > len {
                    let m = Msg {
                        tag: h[0],
                        start: self.rstart + 5,
                        end: self.rstart + 1 + len,
                    };
                    self.rstart += 1 + len;
                    return Ok(m);
                }
                if 1 + len > self.rbuf.len() {
                    self.rbuf.resize(1 + len, 0);
                }
            }
            // Compact, then read more.
            if self.rstart > 0 {
                self.rbuf.copy_within(self.rstart..self.rend, 0);
                self.rend -= self.rstart;
                self.rstart = 0;
            }
            let n = self
                .stream
                .read(&mut self.rbuf[self.rend..])
                .map_err(|e| io_text("reading from", &e))?;
            if n == 0 {
                bail!("the server closed the connection");
            }
            self.rend += n;
        }
    }

    /// "ERROR: message (SQLSTATE code)" from an ErrorResponse.
    fn error_text(&self, m: &Msg) -> String {
        let body = &self.rbuf[m.start..m.end];
        let (mut sev, mut code, mut msg) = (String::new(), String::new(), String::new());
        let mut i = 0;
        while i < body.len() && body[i] != 0 {
            let f = body[i];
            let end = body[i + 1..]
                .iter()
                .position(|&c| c == 0)
                .map_or(body.len(), |p| i + 1 + p);
            let v = String::from_utf8_lossy(&body[i + 1..end]).to_string();
            match f {
                b'S' => sev = v,
                b'C' => code = v,
                b'M' => msg = v,
                _ => {}
            }
            i = end + 1;
        }
        format!("{sev}: {msg} (SQLSTATE {code})")
    }
}

impl Drop for WireConn {
    fn drop(&mut self) {
        // Terminate: the backend exits at once instead of noticing EOF later.
        let _ = self.stream.write_all(&[b'X', 0, 0, 0, 4]);
    }
}

/// An I/O error as text, naming a dropped connection as such.
fn io_text(what: &str, e: &std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    if matches!(
        e.kind(),
        BrokenPipe | ConnectionReset | ConnectionAborted | UnexpectedEof
    ) {
        anyhow!("the server closed the connection ({what} it: {e})")
    } else {
        anyhow!("{what} the server: {e}")
    }
}

/// Rows from a CommandComplete tag such as `INSERT 0 2`.
fn command_rows(body: &[u8]) -> u64 {
    let s = body.strip_suffix(&[0]).unwrap_or(body);
    std::str::from_utf8(s)
        .ok()
        .and_then(|t| t.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn tcp_connect(name: &str, port: u16, timeout: Duration) -> Result<Stream> {
    let addrs: Vec<_> = (name, port)
        .to_socket_addrs()
        .with_context(|| format!("resolving {name}"))?
        .collect();
    let mut last = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout.max(Duration::from_millis(1))) {
            Ok(s) => {
                s.set_nodelay(true)?;
                return Ok(Stream::Tcp(s));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.map_or_else(
        || anyhow!("{name} has no address"),
        |e| anyhow::Error::new(e).context(format!("connecting to {name}:{port}")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_tag_rows() {
        assert_eq!(command_rows(b"INSERT 0 2\0"), 2);
        assert_eq!(command_rows(b"SELECT 1\0"), 1);
        assert_eq!(command_rows(b"BEGIN\0"), 0);
    }
}
