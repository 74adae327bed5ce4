//! Where a PostgreSQL password comes from when the `--db` URL has none, in libpq's order
//! (PostgreSQL documentation, "34.16 The Password File" and "34.15 Environment
//! Variables"): a password file named on the command line, then `PGPASSWORD`, then the
//! password file `PGPASSFILE` or `~/.pgpass`.
//!
//! A password in the URL still works, but any local user reads it in `ps` and
//! `/proc/PID/cmdline`, and it stays in shell history: [`url_password_warning`] says so.
//! Parsing is pure: the environment and file contents are passed in, so tests need no
//! real home directory.

use std::path::{Path, PathBuf};

/// Where a password was found (for messages; never the password itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasswordSource {
    /// In the connection URL or string (visible to other users).
    Url,
    /// The file given with `--db-password-file`.
    File(PathBuf),
    /// The `PGPASSWORD` environment variable.
    Env,
    /// A matching line of the password file (`PGPASSFILE` or `~/.pgpass`).
    PassFile(PathBuf),
}

/// The connection's identity that a password file line is matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Host name, or `localhost` for a Unix-socket directory (as libpq matches it).
    pub host: String,
    pub port: u16,
    pub database: String,
    pub user: String,
}

/// What the process environment holds that matters here.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub pgpassword: Option<String>,
    pub pgpassfile: Option<PathBuf>,
    pub home: Option<PathBuf>,
}

impl Env {
    /// Reads `PGPASSWORD`, `PGPASSFILE` and `HOME`.
    pub fn from_process() -> Env {
        Env {
            pgpassword: std::env::var("PGPASSWORD").ok().filter(|s| !s.is_empty()),
            pgpassfile: std::env::var_os("PGPASSFILE").map(PathBuf::from),
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }

    /// The password file libpq would read.
    pub fn passfile(&self) -> Option<PathBuf> {
        self.pgpassfile
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".pgpass")))
    }
}

/// The one-line warning for a password typed into the URL.
pub fn url_password_warning() -> &'static str {
    "warning: the --db URL holds a password, which other local users can read in `ps` and \
     /proc/PID/cmdline and which stays in shell history; use PGPASSWORD, ~/.pgpass \
     (PGPASSFILE) or --db-password-file instead"
}

/// The first line of a `--db-password-file`, without its line ending: a regular file of at
/// most [`crate::limits::MAX_PASSWORD_FILE_BYTES`] ([`crate::fsutil::read_input`]).
pub fn read_password_file(path: &Path) -> Result<String, crate::error::BadInput> {
    let text = crate::fsutil::read_input_text(path, crate::limits::MAX_PASSWORD_FILE_BYTES)
        .map_err(|e| {
            crate::error::BadInput(format!("--db-password-file {}: {e}", path.display()))
        })?;
    let line = text.lines().next().unwrap_or("").to_string();
    if line.is_empty() {
        return Err(crate::error::BadInput(format!(
            "--db-password-file {}: the first line is empty; it should hold the password",
            path.display()
        )));
    }
    Ok(line)
}

/// The password from a password file's `text` for `ep`: the first line whose five
/// `host:port:database:user:password` fields match (`*` matches anything; `\:` and `\\`
/// escape). Comment lines start with `#`.
pub fn match_passfile(text: &str, ep: &Endpoint) -> Option<String> {
    let port = ep.port.to_string();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f = split_fields(line);
        if f.len() < 5 {
            continue;
        }
        let ok = |field: &str, value: &str| field == "*" || field == value;
        if ok(&f[0], &ep.host) && ok(&f[1], &port) && ok(&f[2], &ep.database) && ok(&f[3], &ep.user)
        {
            return Some(f[4].clone());
        }
    }
    None
}

/// Splits a password-file line at unescaped `:`; the fifth field keeps any further text.
fn split_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    out.last_mut().expect("non-empty").push(n);
                }
            }
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut().expect("non-empty").push(c),
        }
    }
    out
}

/// libpq ignores a password file that group or others can read or write, with a warning;
/// so does smtlab. Returns the warning when the mode is too open.
#[cfg(unix)]
pub fn passfile_mode_problem(path: &Path, mode: u32) -> Option<String> {
    (mode & 0o077 != 0).then(|| {
        format!(
            "warning: password file {} has group or world access (mode {:o}); it is ignored, \
             as libpq ignores it: chmod 0600 it",
            path.display(),
            mode & 0o777
        )
    })
}

/// The warning for a `--db-password-file` that group or others can read or write: libpq
/// ignores such a `~/.pgpass` (and so does smtlab, [`passfile_mode_problem`]); a file named
/// on the command line is used, but not without a word. None when its mode is 0600 or
/// stricter, or it cannot be read (reading it says why).
pub fn password_file_warning(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode();
    (mode & 0o077 != 0).then(|| {
        format!(
            "warning: --db-password-file {} can be read by group or others (mode {:o}), as \
             libpq refuses for ~/.pgpass: chmod 0600 it",
            path.display(),
            mode & 0o777
        )
    })
}

/// The password for `ep` when the URL has none: `password_file` first, then `PGPASSWORD`,
/// then the password file. Warnings (an ignored password file) go to `warn`.
pub fn resolve(
    ep: &Endpoint,
    password_file: Option<&Path>,
    env: &Env,
    warn: &mut dyn FnMut(String),
) -> Result<Option<(String, PasswordSource)>, crate::error::BadInput> {
    if let Some(p) = password_file {
        return Ok(Some((
            read_password_file(p)?,
            PasswordSource::File(p.to_path_buf()),
        )));
    }
    if let Some(pw) = &env.pgpassword {
        return Ok(Some((pw.clone(), PasswordSource::Env)));
    }
    let Some(path) = env.passfile() else {
        return Ok(None);
    };
    let name = if env.pgpassfile.is_some() {
        "PGPASSFILE"
    } else {
        "the password file"
    };
    let bad = |e: crate::fsutil::InputError| {
        crate::error::BadInput(format!("{name} {}: {e}", path.display()))
    };
    // As libpq: a password file that is not there is no password. Anything else there
    // that is not a readable regular file is an error, not a silent "no password" that
    // surfaces later as an authentication failure; `read_input` names it (a FIFO, a loop
    // of links, …) without opening it.
    let meta = match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => m,
        _ => {
            return match crate::fsutil::read_input(&path, 0) {
                Err(crate::fsutil::InputError::Missing) | Ok(_) => Ok(None),
                Err(e) => Err(bad(e)),
            };
        }
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Some(w) = passfile_mode_problem(&path, meta.permissions().mode()) {
            warn(w);
            return Ok(None);
        }
    }
    let text = crate::fsutil::read_input_text(&path, crate::limits::MAX_PASSWORD_FILE_BYTES)
        .map_err(bad)?;
    Ok(match_passfile(&text, ep).map(|pw| (pw, PasswordSource::PassFile(path))))
}

/// The endpoint a `postgres::Config` connects to, with libpq's defaults: the first host
/// (a socket directory counts as `localhost`), port 5432, user `PGUSER` or the login name,
/// database = user.
pub fn endpoint(config: &postgres::Config) -> Endpoint {
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config
        .get_user()
        .map(str::to_string)
        .or_else(|| std::env::var("PGUSER").ok())
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_default();
    let database = config
        .get_dbname()
        .map(str::to_string)
        .unwrap_or_else(|| user.clone());
    Endpoint {
        host,
        port,
        database,
        user,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep() -> Endpoint {
        Endpoint {
            host: "127.0.0.1".into(),
            port: 5432,
            database: "bench".into(),
            user: "alice".into(),
        }
    }

    #[test]
    fn passfile_lines_match_like_libpq() {
        let text = "# comment\n\
                    otherhost:5432:bench:alice:wrong\n\
                    127.0.0.1:*:bench:alice:p\\:ss\\\\word\n\
                    *:*:*:*:fallback\n";
        assert_eq!(match_passfile(text, &ep()).as_deref(), Some("p:ss\\word"));
        let mut other = ep();
        other.user = "bob".into();
        assert_eq!(match_passfile(text, &other).as_deref(), Some("fallback"));
        assert_eq!(match_passfile("127.0.0.1:5432:bench:alice\n", &ep()), None);
        // The password field keeps any further colons.
        assert_eq!(match_passfile("*:*:*:*:a:b", &ep()).as_deref(), Some("a:b"));
    }

    #[test]
    fn order_is_file_then_env_then_passfile() {
        let dir = tempfile::tempdir().unwrap();
        let pf = dir.path().join("pgpass");
        std::fs::write(&pf, "*:*:*:*:from-passfile\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pf, std::fs::Permissions::from_mode(0o600)).unwrap();
        let given = dir.path().join("pw");
        std::fs::write(&given, "from-file\nignored\n").unwrap();
        let mut env = Env {
            pgpassword: Some("from-env".into()),
            pgpassfile: Some(pf.clone()),
            home: None,
        };
        let mut warns = Vec::new();
        let mut w = |s: String| warns.push(s);
        let got = |r: Option<(String, PasswordSource)>| r.map(|(p, _)| p);
        assert_eq!(
            got(resolve(&ep(), Some(&given), &env, &mut w).unwrap()).as_deref(),
            Some("from-file")
        );
        assert_eq!(
            got(resolve(&ep(), None, &env, &mut w).unwrap()).as_deref(),
            Some("from-env")
        );
        env.pgpassword = None;
        assert_eq!(
            resolve(&ep(), None, &env, &mut w).unwrap(),
            Some(("from-passfile".into(), PasswordSource::PassFile(pf.clone())))
        );
        // A passfile others can read is ignored, with a warning.
        std::fs::set_permissions(&pf, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(resolve(&ep(), None, &env, &mut w).unwrap(), None);
        let e = resolve(&ep(), Some(&dir.path().join("missing")), &env, &mut w).unwrap_err();
        assert!(
            e.0.contains("--db-password-file") && e.0.contains("missing"),
            "{e}"
        );
        assert!(warns.iter().any(|x| x.contains("chmod 0600")), "{warns:?}");
    }

    #[test]
    fn endpoint_defaults() {
        let c: postgres::Config = "postgres://bob@db.example/shop".parse().unwrap();
        let e = endpoint(&c);
        assert_eq!((e.host.as_str(), e.port), ("db.example", 5432));
        assert_eq!((e.user.as_str(), e.database.as_str()), ("bob", "shop"));
        let c: postgres::Config = "host=/run/postgresql user=u".parse().unwrap();
        let e = endpoint(&c);
        assert_eq!((e.host.as_str(), e.database.as_str()), ("localhost", "u"));
    }
}
