//! The file backend: a regular file `<backend_dir>/<export>.img` (created or extended to the
//! export size), or a block device that path names (a symlink to `/dev/...`: its size is the
//! device's, found by seeking to its end), read and written with positioned `pread`/`pwrite` on
//! tokio's blocking pool, through the page cache or with `O_DIRECT`.
//!
//! With direct I/O every transfer is aligned to the backend's block size (a block device's
//! logical block size from sysfs, 4096 for a regular file: the largest logical block size of
//! common devices, so it is right on any filesystem) in a buffer aligned to 4096 bytes. A read
//! of any offset and length is served from the aligned blocks that cover it (a bounce buffer); a
//! write whose offset or length is not a multiple of the block size is refused with `EINVAL`
//! (a read-modify-write of the partial blocks would race with a concurrent write to the same
//! block), and the export advertises the block size as its minimum block size, which libnbd,
//! QEMU and the kernel's nbd driver honour.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::proto;

/// The block size of a regular file opened with direct I/O.
pub const FILE_DIRECT_BLOCK: u64 = 4096;
/// Alignment of direct I/O buffers in memory.
const MEMORY_ALIGN: usize = 4096;

/// One export's file or block device.
pub struct FileBackend {
    file: File,
    /// Requests must be aligned to this (1 without direct I/O).
    block: u64,
    direct: bool,
    /// The export's size in bytes.
    pub size: u64,
    /// Whether the path is a block device.
    pub is_device: bool,
    /// Whether `preadv2(RWF_NOWAIT)` may work here (cleared the first time the kernel or the
    /// filesystem refuses the flag).
    nowait: AtomicBool,
}

impl FileBackend {
    /// Open `path`: a block device as it is, else a regular file created or extended to
    /// `export_size`.
    pub fn open(path: &Path, export_size: u64, direct: bool) -> Result<Self, String> {
        let at = |e: std::io::Error| format!("{}: {e}", path.display());
        let meta = std::fs::metadata(path).ok();
        let is_device = meta.as_ref().is_some_and(|m| m.file_type().is_block_device());
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        if !is_device {
            options.create(true).truncate(false);
        }
        if direct {
            options.custom_flags(libc::O_DIRECT);
        }
        let mut file = options.open(path).map_err(|e| {
            if direct && e.raw_os_error() == Some(libc::EINVAL) {
                format!(
                    "{}: the filesystem does not support O_DIRECT (tmpfs?): {e}",
                    path.display()
                )
            } else {
                at(e)
            }
        })?;
        let (size, block) = if is_device {
            let size = file.seek(SeekFrom::End(0)).map_err(at)?;
            let block = match &meta {
                Some(m) if direct => logical_block_size(m),
                _ => 1,
            };
            (size, block)
        } else {
            if direct && export_size % FILE_DIRECT_BLOCK != 0 {
                return Err(format!(
                    "{}: with direct I/O the export size must be a multiple of {FILE_DIRECT_BLOCK}",
                    path.display()
                ));
            }
            let len = file.metadata().map_err(at)?.len();
            if len < export_size {
                file.set_len(export_size).map_err(at)?;
            }
            (export_size, if direct { FILE_DIRECT_BLOCK } else { 1 })
        };
        if size == 0 {
            return Err(format!("{}: size 0", path.display()));
        }
        Ok(Self { file, block, direct, size, is_device, nowait: AtomicBool::new(!direct) })
    }

    /// The export's minimum block size (1 without direct I/O).
    pub fn block(&self) -> u32 {
        u32::try_from(self.block).unwrap_or(u32::MAX)
    }

    /// Whether a write of `length` bytes at `offset` can be served (always, without direct I/O).
    pub fn write_aligned(&self, offset: u64, length: u32) -> bool {
        offset % self.block == 0 && u64::from(length) % self.block == 0
    }

    /// Read `length` bytes at `offset` (within the export): the whole reply (header, data).
    pub fn read(&self, handle: u64, offset: u64, length: u32) -> Vec<u8> {
        let len = length as usize;
        let mut reply = vec![0u8; 16 + len];
        let ok = if self.direct {
            let start = offset - offset % self.block;
            let end = (offset + u64::from(length)).div_ceil(self.block) * self.block;
            let span = (end.min(self.size.max(start)) - start) as usize;
            let (mut buf, at) = aligned(span);
            let skip = (offset - start) as usize;
            let ok = span >= skip + len
                && self.file.read_exact_at(&mut buf[at..at + span], start).is_ok();
            if ok {
                reply[16..].copy_from_slice(&buf[at + skip..at + skip + len]);
            }
            ok
        } else {
            self.file.read_exact_at(&mut reply[16..], offset).is_ok()
        };
        if !ok {
            return proto::simple_reply(proto::EIO, handle).to_vec();
        }
        reply[..16].copy_from_slice(&proto::simple_reply(0, handle));
        reply
    }

    /// Read `length` bytes at `offset` if they are all in the page cache, without blocking
    /// (`preadv2` with `RWF_NOWAIT`: the kernel answers `EAGAIN` instead of going to the
    /// device): the whole reply, or `None` — not cached, a short read, direct I/O, or a kernel
    /// or filesystem without the flag — and the caller reads with [`Self::read`] on a thread
    /// that may block. Costs a copy of the data (microseconds for 4 KiB), so the dispatcher
    /// task serves page-cached reads itself instead of waking a blocking-pool thread for each.
    pub fn read_cached(&self, handle: u64, offset: u64, length: u32) -> Option<Vec<u8>> {
        if !self.nowait.load(Ordering::Relaxed) || length == 0 {
            return None;
        }
        let len = length as usize;
        let mut reply = vec![0u8; 16 + len];
        let iov = libc::iovec { iov_base: reply[16..].as_mut_ptr().cast(), iov_len: len };
        let at = libc::off_t::try_from(offset).ok()?;
        // SAFETY: one iovec over `len` bytes of `reply`, alive for the call; the fd is open.
        let n = unsafe { libc::preadv2(self.file.as_raw_fd(), &iov, 1, at, libc::RWF_NOWAIT) };
        if n < 0 {
            let e = std::io::Error::last_os_error().raw_os_error();
            if matches!(e, Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) | Some(libc::ENOSYS)) {
                self.nowait.store(false, Ordering::Relaxed);
            }
            return None;
        }
        if n as usize != len {
            return None;
        }
        reply[..16].copy_from_slice(&proto::simple_reply(0, handle));
        Some(reply)
    }

    /// Write `payload` at `offset` (aligned with direct I/O, see [`Self::write_aligned`]), then
    /// `fdatasync` if `fua`; whether it succeeded.
    pub fn write(&self, offset: u64, payload: &[u8], fua: bool) -> bool {
        let ok = if self.direct {
            if !self.write_aligned(offset, payload.len() as u32) {
                return false;
            }
            let (mut buf, at) = aligned(payload.len());
            buf[at..at + payload.len()].copy_from_slice(payload);
            self.file.write_all_at(&buf[at..at + payload.len()], offset).is_ok()
        } else {
            self.file.write_all_at(payload, offset).is_ok()
        };
        ok && (!fua || self.flush())
    }

    /// `fdatasync`: written data (and, with direct I/O, the device's volatile cache) is stable.
    pub fn flush(&self) -> bool {
        self.file.sync_data().is_ok()
    }
}

/// A zeroed buffer with `len` bytes starting at a `MEMORY_ALIGN`-aligned index (returned).
fn aligned(len: usize) -> (Vec<u8>, usize) {
    let buf = vec![0u8; len + MEMORY_ALIGN];
    let at = buf.as_ptr().align_offset(MEMORY_ALIGN).min(MEMORY_ALIGN);
    (buf, at)
}

/// A block device's logical block size (sysfs; a partition's is its disk's), 4096 if unknown.
fn logical_block_size(meta: &Metadata) -> u64 {
    let rdev = meta.rdev();
    let major = ((rdev >> 32) & 0xffff_f000) | ((rdev >> 8) & 0xfff);
    let minor = ((rdev >> 12) & 0xffff_ff00) | (rdev & 0xff);
    let base = format!("/sys/dev/block/{major}:{minor}");
    for path in
        [format!("{base}/queue/logical_block_size"), format!("{base}/../queue/logical_block_size")]
    {
        if let Some(v) =
            std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse::<u64>().ok())
        {
            if v.is_power_of_two() {
                return v;
            }
        }
    }
    FILE_DIRECT_BLOCK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffered_file_reads_and_writes_any_alignment() {
        let dir = std::env::temp_dir().join(format!("tbgate-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = FileBackend::open(&dir.join("a.img"), 8192, false).unwrap();
        assert_eq!((f.size, f.block(), f.is_device), (8192, 1, false));
        assert!(f.write_aligned(3, 5) && f.write(3, b"hello", false));
        let r = f.read(7, 3, 5);
        assert_eq!(&r[16..], b"hello");
        assert_eq!(r[..16], proto::simple_reply(0, 7));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cached_reads_match_reads_and_direct_io_never_tries() {
        let dir = std::env::temp_dir().join(format!("tbgate-cached-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = FileBackend::open(&dir.join("a.img"), 8192, false).unwrap();
        assert!(f.write(100, b"cached bytes", false));
        // just written: in the page cache (or the filesystem lacks the flag: None, not wrong)
        if let Some(r) = f.read_cached(9, 100, 12) {
            assert_eq!(r, f.read(9, 100, 12));
        }
        assert!(f.read_cached(9, 0, 0).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        for len in [0, 1, 4096, 65536] {
            let (buf, at) = aligned(len);
            assert_eq!(buf[at..].as_ptr() as usize % MEMORY_ALIGN, 0);
            assert!(buf.len() >= at + len);
        }
    }
}
