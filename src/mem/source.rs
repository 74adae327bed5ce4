//! Where `mem report` reads procfs and sysfs from: a directory tree (`/`, or a copy given
//! with `--sysfs-root`) or, for tests and the study's synthetic report, files held in
//! memory. Every read says why it failed, so a missing file becomes "not available",
//! never a made-up 0.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a file gave no text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The file does not exist (an older kernel, a kernel built without the feature, a
    /// container that hides it).
    Missing,
    /// It exists but could not be read (permissions, a vanished process).
    Unreadable(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Missing => f.write_str("missing"),
            ReadError::Unreadable(e) => write!(f, "unreadable ({e})"),
        }
    }
}

/// A tree of procfs and sysfs files, addressed by paths relative to its root
/// (`proc/meminfo`, `sys/kernel/mm/transparent_hugepage/enabled`).
pub trait Source {
    /// The whole text of a file.
    fn read(&self, rel: &str) -> Result<String, ReadError>;
    /// The names in a directory, sorted; None when the directory does not exist.
    fn list(&self, rel: &str) -> Option<Vec<String>>;
    /// The root, as shown to people (`/` for this machine).
    fn label(&self) -> String;
}

/// Files under a directory.
#[derive(Debug, Clone)]
pub struct Dir {
    root: PathBuf,
}

impl Dir {
    pub fn new(root: &Path) -> Self {
        Dir {
            root: root.to_path_buf(),
        }
    }
}

impl Source for Dir {
    fn read(&self, rel: &str) -> Result<String, ReadError> {
        let path = self.root.join(rel.trim_start_matches('/'));
        // The one reader of kernel files: a FIFO in a copied tree reads as empty instead of
        // waiting forever, a link to /dev/zero is an error instead of an endless read.
        match crate::fsutil::read_kernel_file(&path, false) {
            Ok(bytes) => Ok(String::from_utf8_lossy(&bytes)
                .trim_end_matches('\0')
                .to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ReadError::Missing),
            // A directory where a file was expected, a process that exited between open
            // and read (ESRCH).
            Err(e) => Err(ReadError::Unreadable(e.to_string())),
        }
    }

    fn list(&self, rel: &str) -> Option<Vec<String>> {
        let rd = std::fs::read_dir(self.root.join(rel.trim_start_matches('/'))).ok()?;
        let mut v: Vec<String> = rd
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        v.sort_unstable();
        Some(v)
    }

    fn label(&self) -> String {
        self.root.display().to_string()
    }
}

/// Files held in memory: `path → text`. Directories exist implicitly, as the parents of
/// the files; a value of `None` marks a file that exists but cannot be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Files {
    pub files: BTreeMap<String, Option<String>>,
}

impl Files {
    /// Adds (or replaces) a file.
    pub fn set(&mut self, rel: &str, text: impl Into<String>) -> &mut Self {
        self.files.insert(rel.to_string(), Some(text.into()));
        self
    }

    /// Adds a file that exists but cannot be read.
    pub fn unreadable(&mut self, rel: &str) -> &mut Self {
        self.files.insert(rel.to_string(), None);
        self
    }

    /// Removes a file, or every file under a directory.
    pub fn remove(&mut self, rel: &str) -> &mut Self {
        let dir = format!("{rel}/");
        self.files.retain(|k, _| k != rel && !k.starts_with(&dir));
        self
    }

    /// Writes the files under `dir` (for tests that run the binary on a tree).
    pub fn write_to(&self, dir: &Path) -> std::io::Result<()> {
        for (rel, text) in &self.files {
            let p = dir.join(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)?;
            }
            match text {
                Some(t) => std::fs::write(&p, t)?,
                None => {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::write(&p, "")?;
                    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000))?;
                }
            }
        }
        Ok(())
    }
}

impl Source for Files {
    fn read(&self, rel: &str) -> Result<String, ReadError> {
        match self.files.get(rel.trim_start_matches('/')) {
            Some(Some(t)) => Ok(t.clone()),
            Some(None) => Err(ReadError::Unreadable("Permission denied".into())),
            None => Err(ReadError::Missing),
        }
    }

    fn list(&self, rel: &str) -> Option<Vec<String>> {
        let dir = format!("{}/", rel.trim_start_matches('/').trim_end_matches('/'));
        let mut names: Vec<String> = self
            .files
            .keys()
            .filter_map(|k| k.strip_prefix(&dir))
            .map(|rest| rest.split('/').next().unwrap_or(rest).to_string())
            .collect();
        if names.is_empty() {
            return None;
        }
        names.dedup();
        Some(names)
    }

    fn label(&self) -> String {
        "(synthetic)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_list_children_once_and_say_why_reads_fail() {
        let mut f = Files::default();
        f.set("proc/1/status", "x")
            .set("proc/1/oom_score", "2")
            .set("proc/22/status", "y")
            .unreadable("proc/22/oom_score");
        assert_eq!(f.list("proc").unwrap(), vec!["1", "22"]);
        assert_eq!(f.list("sys"), None);
        assert_eq!(f.read("proc/1/oom_score").unwrap(), "2");
        assert_eq!(f.read("proc/3/status"), Err(ReadError::Missing));
        assert!(matches!(
            f.read("proc/22/oom_score"),
            Err(ReadError::Unreadable(_))
        ));
        f.remove("proc/22");
        assert_eq!(f.list("proc").unwrap(), vec!["1"]);
    }

    #[test]
    fn a_directory_tree_reads_the_same_as_memory() {
        let t = tempfile::tempdir().unwrap();
        let mut f = Files::default();
        f.set("proc/sys/vm/overcommit_memory", "2\n");
        f.write_to(t.path()).unwrap();
        let d = Dir::new(t.path());
        assert_eq!(d.read("proc/sys/vm/overcommit_memory").unwrap(), "2\n");
        assert_eq!(d.read("proc/sys/vm/nope"), Err(ReadError::Missing));
        assert_eq!(d.list("proc/sys/vm").unwrap(), vec!["overcommit_memory"]);
        assert!(matches!(d.read("proc/sys"), Err(ReadError::Unreadable(_))));
    }
}
