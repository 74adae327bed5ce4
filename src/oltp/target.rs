//! Which database `--db` names, and how to print it without its password.

use crate::error::BadInput;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The `--db` values accepted on the command line.
pub const TARGET_NAMES: &str =
    "sqlite, sqlite:PATH, postgres-managed, postgres://USER[:PASSWORD]@HOST[:PORT]/DB";

/// A database to run against.
#[derive(Clone, PartialEq, Eq)]
pub enum DbTarget {
    /// Bundled SQLite: a file in a temporary directory (`None`, removed afterwards) or at
    /// the given path (kept).
    Sqlite(Option<PathBuf>),
    /// An existing PostgreSQL server, by URL or `key=value` connection string. The string
    /// may hold a password: print it only through [`redact`] (this type's `Debug` and
    /// `Display` do). Without one, the password comes from `password_file`, `PGPASSWORD`
    /// or the password file, as libpq looks (see `secret`).
    Postgres {
        url: String,
        /// `--db-password-file`: a file whose first line is the password.
        password_file: Option<PathBuf>,
    },
    /// A throwaway cluster smtlab creates, starts and removes (see `managed`).
    PostgresManaged,
}

impl DbTarget {
    /// Parses a `--db` value.
    pub fn parse(s: &str) -> Result<Self, BadInput> {
        let t = s.trim();
        if t == "sqlite" {
            return Ok(DbTarget::Sqlite(None));
        }
        if let Some(p) = t.strip_prefix("sqlite:") {
            if p.is_empty() {
                return Err(BadInput(
                    "`--db sqlite:` needs a file path, as in `sqlite:/tmp/oltp.db`".into(),
                ));
            }
            let path = PathBuf::from(p);
            if path.is_dir() {
                return Err(BadInput(format!(
                    "`--db sqlite:{p}` is a directory; give a database file, as in `sqlite:{}`",
                    path.join("oltp.db").display()
                )));
            }
            // SQLite writes the file in place: a device or FIFO there would be written
            // into, and a missing directory would fail only after the run has started.
            if let Some(why) = crate::fsutil::not_replaceable(&path) {
                return Err(BadInput(format!(
                    "`--db sqlite:{p}`: {why}, not a database file; give a regular file (or \
                     a path with nothing yet)"
                )));
            }
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            if !dir.is_dir() {
                return Err(BadInput(format!(
                    "`--db sqlite:{p}`: directory {} does not exist; give a file in an existing \
                     directory",
                    dir.display()
                )));
            }
            // SQLite writes the file, its journal and its WAL in that directory: find out
            // now that it can, not after the server side of the run has started (as root
            // a directory under /proc passes access(2), so a file is made and removed).
            if let Some(why) = crate::fsutil::output_problem(&path) {
                return Err(BadInput(format!(
                    "`--db sqlite:{p}`: {why}; give a database file (or a path with nothing \
                     yet) in a directory smtlab can write"
                )));
            }
            if path.exists() {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|e| {
                        BadInput(format!(
                            "`--db sqlite:{p}`: cannot write the database file ({e}); give a \
                             file this user can write, or a new path"
                        ))
                    })?;
            }
            return Ok(DbTarget::Sqlite(Some(path)));
        }
        if t == "postgres-managed" || t == "postgresql-managed" {
            return Ok(DbTarget::PostgresManaged);
        }
        if t.starts_with("postgres://") || t.starts_with("postgresql://") {
            return postgres_target(t);
        }
        if t.contains('=') && (t.contains("host=") || t.contains("dbname=")) {
            return postgres_target(t);
        }
        Err(BadInput(format!(
            "unknown database `{}`; valid: {TARGET_NAMES}",
            redact(t)
        )))
    }

    /// The same target with `--db-password-file` attached (PostgreSQL by URL only).
    pub fn with_password_file(self, file: Option<PathBuf>) -> Result<Self, BadInput> {
        match (self, file) {
            (t, None) => Ok(t),
            // Read now, so a file that is missing, not a file or empty is refused (exit 2)
            // before anything runs, by every command alike; it is read again to connect.
            (DbTarget::Postgres { url, .. }, Some(f)) => {
                super::secret::read_password_file(&f)?;
                if let Some(w) = super::secret::password_file_warning(&f) {
                    crate::say!("{w}");
                }
                Ok(DbTarget::Postgres {
                    url,
                    password_file: Some(f),
                })
            }
            (t, Some(_)) => Err(BadInput(format!(
                "--db-password-file is for --db postgres://…; `{t}` needs no password"
            ))),
        }
    }

    /// How long connecting may take, from the connection string's `connect_timeout` or
    /// else `PGCONNECT_TIMEOUT`, as libpq reads them; None when neither is given (the
    /// caller's default applies).
    pub fn connect_timeout(&self) -> Result<Option<ConnectTimeout>, BadInput> {
        match self {
            DbTarget::Postgres { url, .. } => {
                connect_timeout_of(url, std::env::var("PGCONNECT_TIMEOUT").ok().as_deref())
            }
            _ => Ok(None),
        }
    }

    /// The engine: `sqlite` or `postgres`.
    pub fn engine(&self) -> &'static str {
        match self {
            DbTarget::Sqlite(_) => "sqlite",
            DbTarget::Postgres { .. } | DbTarget::PostgresManaged => "postgres",
        }
    }
}

impl fmt::Display for DbTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbTarget::Sqlite(None) => f.write_str("sqlite (temporary file)"),
            DbTarget::Sqlite(Some(p)) => write!(f, "sqlite:{}", p.display()),
            DbTarget::Postgres { url, .. } => f.write_str(&redact(url)),
            DbTarget::PostgresManaged => f.write_str("postgres-managed"),
        }
    }
}

impl fmt::Debug for DbTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DbTarget({self})")
    }
}

/// A connection attempt's time limit, as libpq's `connect_timeout` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectTimeout {
    /// Give up after this long.
    After(Duration),
    /// `0` or negative: wait as long as it takes (libpq's "wait indefinitely"); Ctrl-C
    /// still ends the wait.
    Never,
}

/// `connect_timeout` of the connection string `conn` (URL query parameter or `key=value`
/// word), else `env` (`PGCONNECT_TIMEOUT`). libpq reads whole seconds, and zero or a
/// negative number as no limit (PostgreSQL documentation, "Parameter Key Words").
pub fn connect_timeout_of(
    conn: &str,
    env: Option<&str>,
) -> Result<Option<ConnectTimeout>, BadInput> {
    let (value, from) = match connect_timeout_param(conn) {
        Some(v) => (v, "connect_timeout"),
        None => match env {
            Some(v) if !v.trim().is_empty() => (v.trim().to_string(), "PGCONNECT_TIMEOUT"),
            _ => return Ok(None),
        },
    };
    let secs: i64 = value.parse().map_err(|_| {
        BadInput(format!(
            "{from} `{}` is not a whole number of seconds (libpq reads `connect_timeout=10`; \
             0 waits as long as it takes)",
            crate::quote::shorten(&value)
        ))
    })?;
    if secs > i64::from(i32::MAX) {
        return Err(BadInput(format!(
            "{from} {secs}: at most {} seconds, as libpq",
            i32::MAX
        )));
    }
    Ok(Some(if secs <= 0 {
        ConnectTimeout::Never
    } else {
        ConnectTimeout::After(Duration::from_secs(secs as u64))
    }))
}

/// The raw `connect_timeout` value of a URL (`?connect_timeout=10&…`) or a `key=value`
/// string (`host=h connect_timeout = 10`).
fn connect_timeout_param(conn: &str) -> Option<String> {
    const KEY: &str = "connect_timeout";
    if conn.contains("://") {
        let query = conn.split_once('?')?.1;
        return query.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k == KEY).then(|| v.trim().to_string())
        });
    }
    let at = conn.find(KEY)?;
    let before_ok = at == 0 || conn[..at].ends_with(char::is_whitespace);
    let rest = conn[at + KEY.len()..].trim_start().strip_prefix('=')?;
    let v: String = rest
        .trim_start()
        .trim_matches('\'')
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '\'')
        .collect();
    before_ok.then_some(v)
}

/// A PostgreSQL target, checked now so that a malformed string is bad input (exit 2) that
/// says what is wrong, before any database work.
fn postgres_target(t: &str) -> Result<DbTarget, BadInput> {
    let shown = redact(t);
    let config: postgres::Config = t.parse().map_err(|e: postgres::Error| {
        // The driver's own text is a bare "invalid connection string"; the useful part
        // ("invalid value for option `port`") is in its source.
        let mut why = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(c) = src {
            why = format!("{why}: {c}");
            src = c.source();
        }
        // The driver's text can quote the string it could not parse.
        let why = if why.contains(t) {
            why.replace(t, &shown)
        } else {
            why
        };
        BadInput(format!(
            "`--db {shown}` is not a valid PostgreSQL connection string: {why}; expected \
             postgres://USER@HOST[:PORT]/DB or `host=… dbname=…`"
        ))
    })?;
    connect_timeout_of(t, None)?;
    if config.get_hosts().is_empty() {
        return Err(BadInput(format!(
            "`--db {shown}` names no host; expected postgres://USER@HOST[:PORT]/DB (a Unix \
             socket directory goes in as postgres://USER@%2Frun%2Fpostgresql/DB)"
        )));
    }
    Ok(DbTarget::Postgres {
        url: t.to_string(),
        password_file: None,
    })
}

/// The connection string with any password replaced by `***`: the URL's user-info
/// password, a `password=` query parameter, or a `password` key of a `key=value` string.
/// Both forms are split as the driver splits them (tokio-postgres, after libpq), so that
/// what it would take as the password is what is hidden.
pub fn redact(s: &str) -> String {
    match s.find("://") {
        Some(i) => redact_url(s, i + 3),
        None => redact_conninfo(s),
    }
}

/// URL form: the user info runs to the first `@` (a raw `/` or `?` in the password is
/// still the password), the password follows its first `:`; query parameters are
/// `&`-separated, with percent-encoded keys. They start at the first `?`, even one inside
/// what the driver reads as user info (`?password=a@b`): hidden either way.
fn redact_url(s: &str, rest: usize) -> String {
    let (head, mut tail) = (&s[..rest], s[rest..].to_string());
    if let Some(at) = tail.find('@')
        && let Some(colon) = tail[..at].find(':')
    {
        tail.replace_range(colon + 1..at, "***");
    }
    let Some(q) = tail.find('?') else {
        return format!("{head}{tail}");
    };
    let params: Vec<String> = tail[q + 1..]
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if percent_decode(k).eq_ignore_ascii_case("password") => {
                format!("{k}=***")
            }
            _ => p.to_string(),
        })
        .collect();
    format!("{head}{}{}", &tail[..=q], params.join("&"))
}

/// `%XX` sequences decoded (lossily), for comparing URL keys.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(v) if b[i] == b'%' => {
                out.push(v);
                i += 3;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `key=value` form: every `password` word that starts a token, then `=` with optional
/// whitespace around it, then a value: `'quoted'` or up to the next whitespace, `\\`
/// escaping the next character. Read from each such word rather than token by token, so
/// that `user= password=x` (whose user the driver reads as `password=x`) is hidden too.
fn redact_conninfo(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len());
    let (mut copied, mut from) = (0, 0);
    while let Some(off) = lower[from..].find("password") {
        let key = from + off;
        from = key + "password".len();
        if !s[..key].chars().next_back().is_none_or(char::is_whitespace) {
            continue;
        }
        let mut it = s[from..].char_indices().peekable();
        let at = |it: &mut std::iter::Peekable<std::str::CharIndices>| {
            from + it.peek().map_or(s.len() - from, |&(i, _)| i)
        };
        while it.next_if(|&(_, c)| c.is_whitespace()).is_some() {}
        if it.next_if(|&(_, c)| c == '=').is_none() {
            continue;
        }
        while it.next_if(|&(_, c)| c.is_whitespace()).is_some() {}
        let value_start = at(&mut it);
        let quoted = it.next_if(|&(_, c)| c == '\'').is_some();
        while let Some((_, c)) = it.next_if(|&(_, c)| {
            if quoted {
                c != '\''
            } else {
                !c.is_whitespace()
            }
        }) {
            if c == '\\' {
                it.next();
            }
        }
        if quoted {
            it.next_if(|&(_, c)| c == '\'');
        }
        let value_end = at(&mut it);
        out.push_str(&s[copied..value_start]);
        out.push_str("***");
        copied = value_end;
        from = value_end;
    }
    out.push_str(&s[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets() {
        assert_eq!(DbTarget::parse("sqlite").unwrap(), DbTarget::Sqlite(None));
        assert_eq!(
            DbTarget::parse("sqlite:/tmp/x.db").unwrap(),
            DbTarget::Sqlite(Some("/tmp/x.db".into()))
        );
        assert_eq!(
            DbTarget::parse("postgres-managed").unwrap(),
            DbTarget::PostgresManaged
        );
        assert!(matches!(
            DbTarget::parse("postgresql://u@h/db").unwrap(),
            DbTarget::Postgres { .. }
        ));
        assert!(matches!(
            DbTarget::parse("host=/tmp dbname=x").unwrap(),
            DbTarget::Postgres { .. }
        ));
        let e = DbTarget::parse("mysql://u:secret@h/db").unwrap_err().0;
        assert!(
            e.contains("unknown database") && !e.contains("secret"),
            "{e}"
        );
        assert!(DbTarget::parse("sqlite:").is_err());
        // Malformed PostgreSQL strings are bad input that says what is wrong, and never
        // echo a password.
        for (bad, needle) in [
            ("postgres://", "no host"),
            ("postgres://u:pw@h:99999/db", "port"),
            ("postgres://u:pw@h/db?sslmode=bogus", "sslmode"),
        ] {
            let e = DbTarget::parse(bad).unwrap_err().0;
            assert!(e.contains(needle), "{bad}: {e}");
            assert!(!e.contains(":pw@"), "{bad}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let e = DbTarget::parse(&format!("sqlite:{}", dir.path().display()))
            .unwrap_err()
            .0;
        assert!(e.contains("is a directory"), "{e}");
    }

    #[test]
    fn connect_timeout_as_libpq_reads_it() {
        let secs = |n| Some(ConnectTimeout::After(Duration::from_secs(n)));
        let of = |c: &str, env| connect_timeout_of(c, env).unwrap();
        assert_eq!(of("postgres://u@h/db", None), None);
        assert_eq!(of("postgres://u@h/db?connect_timeout=10", None), secs(10));
        assert_eq!(
            of("postgres://u@h/db?sslmode=disable&connect_timeout=1", None),
            secs(1)
        );
        assert_eq!(
            of("postgres://u@h/db?connect_timeout=0", None),
            Some(ConnectTimeout::Never)
        );
        assert_eq!(
            of("postgres://u@h/db?connect_timeout=-5", None),
            Some(ConnectTimeout::Never)
        );
        assert_eq!(of("host=h connect_timeout = 7 dbname=d", None), secs(7));
        assert_eq!(of("host=h connect_timeout='3'", None), secs(3));
        // The environment only when the string says nothing.
        assert_eq!(of("postgres://u@h/db", Some("12")), secs(12));
        assert_eq!(
            of("postgres://u@h/db?connect_timeout=2", Some("12")),
            secs(2)
        );
        for bad in [
            "postgres://u@h/db?connect_timeout=10s",
            "postgres://u@h/db?connect_timeout=99999999999",
        ] {
            let e = DbTarget::parse(bad).unwrap_err().0;
            assert!(e.contains("connect_timeout"), "{bad}: {e}");
        }
        assert!(connect_timeout_of("postgres://u@h/db", Some("soon")).is_err());
    }

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact("postgres://u:secret@127.0.0.1:1/db"),
            "postgres://u:***@127.0.0.1:1/db"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redact("postgres://u:p%40ss:w@h/db?sslmode=disable&password=zz"),
            "postgres://u:***@h/db?sslmode=disable&password=***"
        );
        assert_eq!(
            redact("host=h password='se cret' user=u"),
            "host=h password=*** user=u"
        );
        assert_eq!(
            redact("host=h PASSWORD=secret user=u"),
            "host=h PASSWORD=*** user=u"
        );
        // Found by tests/fuzz.rs: the driver allows spaces around `=` and raw `#`, `&`
        // in a value, and takes everything before the URL's first `@` as user info.
        assert_eq!(
            redact("host=h password = se#c&ret user=u"),
            "host=h password = *** user=u"
        );
        assert_eq!(
            redact("host=h user= password=secret"),
            "host=h user= password=***"
        );
        assert_eq!(
            redact("postgres://%2Ftmp?password=se@cret"),
            "postgres://%2Ftmp?password=***"
        );
        assert_eq!(
            redact("postgres://u:se/c?ret@h/db?pass%77ord=x&a=b"),
            "postgres://u:***@h/db?pass%77ord=***&a=b"
        );
        let d = format!(
            "{:?}",
            DbTarget::Postgres {
                url: "postgres://u:secret@h/db".into(),
                password_file: None,
            }
        );
        assert!(!d.contains("secret"), "{d}");
    }
}
