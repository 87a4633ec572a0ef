//! Reading toolhost's own files: plugin and middleware components, skills,
//! settings files and the lock file. One opener for all of them, because
//! each can be swapped for something that is not a file by whoever can
//! write where it lies (a model's `mkfifo` in a working directory that
//! holds skills, a FIFO named `x.wasm` in a plugin folder), and a plain
//! `read` of a FIFO waits for a writer for ever, a device never ends, and
//! a 3 GiB sparse file is read whole into memory.
//!
//! So every read opens with `O_NONBLOCK` (opening a FIFO does not wait for
//! a writer) and `O_NOCTTY`, asks the opened descriptor what it is
//! (`fstat`, so nothing can be swapped in between), refuses anything but a
//! regular file naming what it is, refuses a file larger than its bound
//! before reading a byte, and reads at most the bound (the file may grow
//! while it is read). Errors name the path, what it is or how large, and
//! the bound; `NotFound` stays `NotFound`, so callers can tell a missing
//! file from a bad one.

use std::fs::{File, Metadata};
use std::io::{self, Read as _};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

/// The largest settings file (`toolhost.toml`, `--config`) read, in bytes.
pub const MAX_SETTINGS_BYTES: u64 = 4 << 20;
/// The largest lock file (`toolhost.lock`) read, in bytes: thousands of
/// pinned components.
pub const MAX_LOCK_BYTES: u64 = 16 << 20;

/// The bound of a settings file.
pub const SETTINGS_BOUND: Bound<'static> = Bound { max: MAX_SETTINGS_BYTES, name: "the most a settings file may hold" };
/// The bound of a lock file.
pub const LOCK_BOUND: Bound<'static> = Bound { max: MAX_LOCK_BYTES, name: "the most a lock file may hold" };

/// A file read whole, with what its descriptor said of it when opened.
#[derive(Debug)]
pub struct OwnFile {
    /// Its bytes (at most the bound).
    pub bytes: Vec<u8>,
    /// The opened file's metadata (its link count, device and inode).
    pub meta: Metadata,
}

/// How a bound is named in an error: the setting that sets it, or what it
/// is (`[limits] max_component_bytes`, `the most a settings file may hold`).
#[derive(Debug, Clone, Copy)]
pub struct Bound<'a> {
    /// The most bytes read.
    pub max: u64,
    /// What the bound is, for the error.
    pub name: &'a str,
}

/// Opens `path` for reading without waiting (`O_NONBLOCK`: a FIFO with
/// no writer opens at once; `O_NOCTTY`: a terminal is not made the
/// controlling one). Symbolic links are followed: a plugin or settings
/// file is often one.
pub fn open(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path)
}

/// Reads `path` whole when it is a regular file of at most `bound.max`
/// bytes ([`open`], then [`read_opened`]).
pub fn read(path: &Path, bound: Bound<'_>) -> io::Result<OwnFile> {
    read_opened(open(path)?, path, bound)
}

/// [`read`] as UTF-8 text; text that is not UTF-8 is an `InvalidData`
/// error naming the path.
pub fn read_to_string(path: &Path, bound: Bound<'_>) -> io::Result<String> {
    let own = read(path, bound)?;
    String::from_utf8(own.bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, format!("{} is not UTF-8 text", path.display())))
}

/// Reads an already opened `file` (shown as `path`) whole when its
/// descriptor is a regular file of at most `bound.max` bytes; what the
/// opener did not open without blocking (`O_NONBLOCK`) must not be a FIFO
/// (a caller with a `cap-std` handle opens through it with the same flags).
pub fn read_opened(mut file: File, path: &Path, bound: Bound<'_>) -> io::Result<OwnFile> {
    let meta = file.metadata()?;
    check_regular(&meta, path)?;
    let too_large = |len: u64, grew: &str| {
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "{} is {len} bytes{grew}, more than the {} bytes of {}; nothing of it was read",
                path.display(),
                bound.max,
                bound.name
            ),
        )
    };
    if meta.len() > bound.max {
        return Err(too_large(meta.len(), ""));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&mut file).take(bound.max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > bound.max {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "{} grew past the {} bytes of {} while it was read; it was not used",
                path.display(),
                bound.max,
                bound.name
            ),
        ));
    }
    Ok(OwnFile { bytes, meta })
}

/// Refuses what is not a regular file, naming what it is.
pub fn check_regular(meta: &Metadata, path: &Path) -> io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {}, not a regular file; toolhost reads its own files (plugins, middleware, skills, settings, the \
             lock file) only from regular files, so it was not read",
            path.display(),
            what_it_is(meta)
        ),
    ))
}

/// What a file that is not regular is, in words.
pub fn what_it_is(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "not a file"
    }
}

/// `<file>.lock`, beside `file`: where one process claims `file` as its
/// own (the host's `Hold`: a named session, the audit log of `serve`).
pub fn lock_path(file: &Path) -> std::path::PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".lock");
    std::path::PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUND: Bound<'static> = Bound { max: 16, name: "the test's bound" };

    #[test]
    fn a_regular_file_within_the_bound_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "hello").unwrap();
        let own = read(&path, BOUND).unwrap();
        assert_eq!((own.bytes.as_slice(), own.meta.len()), (&b"hello"[..], 5));
        assert_eq!(read_to_string(&path, BOUND).unwrap(), "hello");
        let missing = read(&dir.path().join("none"), BOUND).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_fifo_a_folder_and_a_device_are_refused_unread_and_a_large_file_unread() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("x.wasm");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // No writer ever comes: a blocking open or read would never return.
        let err = read(&fifo, BOUND).unwrap_err();
        assert!(err.to_string().contains("is a FIFO (named pipe), not a regular file"), "{err}");
        assert!(err.to_string().contains(&fifo.display().to_string()), "{err}");
        let err = read(dir.path(), BOUND).unwrap_err();
        assert!(err.to_string().contains("is a folder"), "{err}");
        let err = read(Path::new("/dev/zero"), BOUND).unwrap_err();
        assert!(err.to_string().contains("is a character device"), "{err}");
        let big = dir.path().join("big");
        std::fs::File::create(&big).unwrap().set_len(3 << 30).unwrap();
        let err = read(&big, BOUND).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert!(err.to_string().contains("3221225472 bytes, more than the 16 bytes of the test's bound"), "{err}");
    }
}
