//! The one way every command writes a file it was asked to write.
//!
//! - A regular file (or a new name) is written whole to a uniquely named
//!   temporary file beside it, then renamed over it: a failed or interrupted
//!   write leaves the old file as it was, and no file of the user's is touched
//!   on the way (the temporary is removed on error, and on Ctrl-C or SIGTERM).
//! - A symlink is followed to its final target, which is replaced the same
//!   way; the link stays.
//! - Anything else that exists (a character device such as `/dev/null`, a
//!   fifo, a socket) is written to directly, never replaced; a write it
//!   refuses (`/dev/full`) is an error.
//! - [`refuse_same_file`] keeps an output from being one of the command's
//!   inputs, checked before any work.

use std::ffi::{CString, OsString};
use std::fs::{self, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Links followed before an output path is called a loop.
const MAX_LINKS: usize = 40;

/// Writes `path` as the module says: `write` writes a whole file at the
/// path it is given (a temporary beside the target, or the existing device
/// or fifo itself), creating or truncating it.
pub fn write_at(path: &Path, write: impl FnOnce(&Path) -> io::Result<()>) -> io::Result<()> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory")),
        Ok(meta) if !meta.is_file() => write(path),
        _ => {
            let target = final_target(path)?;
            let dir = match target.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            };
            let mut prefix = OsString::from(".");
            prefix.push(target.file_name().unwrap_or_default());
            prefix.push(".");
            let tmp = tempfile::Builder::new()
                .prefix(&prefix)
                .suffix(".tmp")
                .permissions(permissions_for(&target))
                .tempfile_in(&dir)?;
            let _guard = interrupt::Guard::new(tmp.path());
            write(tmp.path())?;
            fs::File::open(tmp.path())?.sync_all()?;
            tmp.persist(&target).map_err(|e| e.error)?;
            Ok(())
        }
    }
}

/// [`write_at`] through a writer.
pub fn write_file(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    write_at(path, |at| {
        let mut out = BufWriter::new(OpenOptions::new().write(true).create(true).truncate(true).open(at)?);
        write(&mut out)?;
        out.into_inner().map_err(|e| e.into_error()).map(drop)
    })
}

/// [`write_file`] of bytes in memory.
pub fn write_bytes(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_file(path, |w| w.write_all(bytes))
}

/// The file a chain of symlinks ends at (existing or not).
fn final_target(path: &Path) -> io::Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&at)?;
                at = match at.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// A replaced file keeps its permissions; a new one gets the usual `0o666`
/// (less the umask, which the system applies).
fn permissions_for(target: &Path) -> fs::Permissions {
    match fs::metadata(target) {
        Ok(meta) => meta.permissions(),
        Err(_) => {
            use std::os::unix::fs::PermissionsExt;
            fs::Permissions::from_mode(0o666)
        }
    }
}

/// An error when `output` (named by flag `output_flag`) is the same file as
/// one of `inputs` (flag, path): same device and inode, through any links.
pub fn refuse_same_file(output_flag: &str, output: &Path, inputs: &[(&str, &Path)]) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    // Metadata, not opened files: opening a fifo would wait for a writer.
    let id = |p: &Path| fs::metadata(p).map(|m| (m.dev(), m.ino())).ok();
    let Some(out) = id(output) else {
        return Ok(());
    };
    for (flag, input) in inputs {
        if id(input) == Some(out) {
            return Err(format!(
                "{output_flag} {} is the same file as {flag} {}: writing it would destroy the input; \
                 choose another output",
                output.display(),
                input.display()
            ));
        }
    }
    Ok(())
}

/// An error unless `path` (the value of `flag`) ends in one of `supported`
/// (without the dot, any case) and its directory exists; a device or fifo
/// that exists (`/dev/null`, a pipe) takes any format.
pub fn check_output_path(flag: &str, path: &Path, supported: &[&str]) -> Result<(), String> {
    if fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Ok(());
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !supported.contains(&ext.as_str()) {
        let list: Vec<String> = supported.iter().map(|s| format!(".{s}")).collect();
        return Err(format!(
            "{flag} {}: unknown output format; the supported: {}",
            path.display(),
            list.join(", ")
        ));
    }
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => Err(format!(
            "{flag} {}: directory {} does not exist",
            path.display(),
            dir.display()
        )),
        _ => Ok(()),
    }
}

/// Removal of the temporaries in flight when the process is interrupted:
/// their names sit in a fixed table of leaked C strings that a signal handler
/// may read (it only loads pointers and calls `unlink`, both safe there).
mod interrupt {
    use super::*;
    use std::sync::atomic::{AtomicPtr, Ordering};
    use std::sync::Once;

    const SLOTS: usize = 64;
    static PATHS: [AtomicPtr<libc::c_char>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];
    static INSTALL: Once = Once::new();

    /// A temporary's name in the table while it lives (none when the table is full).
    pub(super) struct Guard(Option<usize>);

    impl Guard {
        pub(super) fn new(path: &Path) -> Guard {
            INSTALL.call_once(install);
            use std::os::unix::ffi::OsStrExt;
            let Ok(name) = CString::new(path.as_os_str().as_bytes()) else {
                return Guard(None);
            };
            let ptr = name.into_raw();
            let slot = PATHS.iter().position(|p| {
                p.compare_exchange(std::ptr::null_mut(), ptr, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
            });
            if slot.is_none() {
                // SAFETY: from `into_raw` above, not shared.
                drop(unsafe { CString::from_raw(ptr) });
            }
            Guard(slot)
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            if let Some(slot) = self.0 {
                let ptr = PATHS[slot].swap(std::ptr::null_mut(), Ordering::SeqCst);
                // SAFETY: the slot held a pointer from `into_raw`, now taken out of the table.
                drop(unsafe { CString::from_raw(ptr) });
            }
        }
    }

    fn install() {
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: the action only loads pointers, unlinks and exits, all
            // async-signal-safe.
            let _ = unsafe { signal_hook_registry::register(signal, move || on_signal(signal)) };
        }
    }

    fn on_signal(signal: libc::c_int) {
        for slot in &PATHS {
            let ptr = slot.load(Ordering::SeqCst);
            if !ptr.is_null() {
                // SAFETY: a NUL-terminated name a live guard owns (leaked while the process ends).
                unsafe { libc::unlink(ptr) };
            }
        }
        // SAFETY: ends the process as the signal's default would (exit status 128 + n).
        unsafe { libc::_exit(128 + signal) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("fno-output-unit-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<_> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_write_that_fails_midway_leaves_the_old_file_and_no_temporary() {
        let d = dir("midway");
        let out = d.join("out.npy");
        fs::write(&out, b"old contents").unwrap();
        let e = write_file(&out, |w| {
            w.write_all(&[7; 100_000])?;
            Err(io::Error::other("the disk went away"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("the disk went away"));
        assert_eq!(fs::read(&out).unwrap(), b"old contents");
        assert_eq!(names(&d), ["out.npy"]);
        write_bytes(&out, b"new").unwrap();
        assert_eq!(fs::read(&out).unwrap(), b"new");
        assert_eq!(names(&d), ["out.npy"]);
    }

    #[test]
    fn links_are_followed_to_their_final_target_even_a_missing_one() {
        let d = dir("links");
        std::os::unix::fs::symlink("b", d.join("a")).unwrap();
        std::os::unix::fs::symlink("sub/c", d.join("b")).unwrap();
        fs::create_dir(d.join("sub")).unwrap();
        write_bytes(&d.join("a"), b"through two links").unwrap();
        assert_eq!(fs::read(d.join("sub/c")).unwrap(), b"through two links");
        assert!(fs::symlink_metadata(d.join("a")).unwrap().file_type().is_symlink());
        assert!(fs::symlink_metadata(d.join("b")).unwrap().file_type().is_symlink());
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        assert!(write_bytes(&d.join("loop"), b"x").is_err());
    }

    #[test]
    fn replaced_files_keep_their_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir("modes");
        let out = d.join("run.sh");
        fs::write(&out, b"old").unwrap();
        fs::set_permissions(&out, fs::Permissions::from_mode(0o751)).unwrap();
        write_bytes(&out, b"new").unwrap();
        assert_eq!(fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o751);
    }

    #[test]
    fn only_the_same_file_is_refused() {
        let d = dir("same");
        let (a, b) = (d.join("a"), d.join("b"));
        fs::write(&a, b"a").unwrap();
        fs::write(&b, b"b").unwrap();
        fs::hard_link(&a, d.join("hard")).unwrap();
        assert!(refuse_same_file("--output", &b, &[("--input", &a)]).is_ok());
        assert!(refuse_same_file("--output", &d.join("new"), &[("--input", &a)]).is_ok());
        let e = refuse_same_file("--output", &d.join("hard"), &[("--x", &b), ("--input", &a)]).unwrap_err();
        assert!(e.contains("--input") && e.contains("same file"), "{e}");
    }
}
