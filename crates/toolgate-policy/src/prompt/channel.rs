//! The byte channel under the JSON-lines prompter: an async line reader and writer, opened
//! over a spawned command (a socket pair) or two inherited descriptors (taken once per
//! process, close-on-exec).
//!
//! Why a socket pair for `--prompt-command`, not pipes: a pipe can be reopened by path
//! through `/proc/<pid>/fd/N` — toolgate's end *and* the command's end, in either direction
//! — by any process allowed to look at that pid, which includes every unsandboxed child
//! running as the same user (and, whatever the dumpable flag says, every root child). A
//! socket cannot be opened through `/proc` at all (`ENXIO`), so neither end is reachable
//! that way. Descriptors an embedder passes with `--prompt-fds` are used as they are (a
//! socket pair is the recommended kind, for the same reason); they are duplicated
//! close-on-exec and the originals marked close-on-exec before first use, so no child of
//! toolgate inherits them.

use std::collections::HashMap;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex as StdMutex, PoisonError, Weak};

use tokio::io::{AsyncBufRead, AsyncWrite, BufReader};
use tokio::sync::Mutex;

/// One side of a prompt conversation: answers are read from `reader`, requests written to
/// `writer`. `pending` holds the part of a line read so far (reads are cancelled by the
/// answer timeout, and a cancelled `read_until` leaves its bytes there).
pub(super) struct Io {
    pub(super) reader: Box<dyn AsyncBufRead + Unpin + Send>,
    pub(super) writer: Box<dyn AsyncWrite + Unpin + Send>,
    pub(super) pending: Vec<u8>,
    /// Requests of this channel given up on (timed out, or refused for a protocol error)
    /// as `(id, nonce)`, newest last: a late answer carrying one of them is skipped rather
    /// than refusing the request after it. Bounded by [`ABANDONED_KEPT`].
    pub(super) abandoned: Vec<(String, String)>,
}

/// Abandoned requests remembered per channel; older late answers count as stray lines.
pub(super) const ABANDONED_KEPT: usize = 16;

impl Io {
    pub(super) fn new(
        reader: impl AsyncBufRead + Unpin + Send + 'static,
        writer: impl AsyncWrite + Unpin + Send + 'static,
    ) -> Self {
        Self {
            reader: Box::new(reader),
            writer: Box::new(writer),
            pending: Vec::new(),
            abandoned: Vec::new(),
        }
    }
}

/// A channel shared by every prompter of the process that uses it.
pub(super) type Shared = Arc<Mutex<Io>>;

/// The channel over descriptors `input` (answers) and `output` (requests). Every session of
/// a process (each `serve --http` session has its own prompter) gets the same channel while
/// one is alive, so one exchange runs at a time on it and an answer is read only by the
/// exchange that asked. The channel closes (its duplicates) when the last prompter using
/// it is dropped; a descriptor number reused for another file gets a channel of its own.
pub(super) fn fds(input: u32, output: u32) -> io::Result<Shared> {
    type Channels = StdMutex<HashMap<(u32, u32), (Identity, Weak<Mutex<Io>>)>>;
    static CHANNELS: std::sync::OnceLock<Channels> = std::sync::OnceLock::new();
    let identity = (identity(input)?, identity(output)?);
    let mut map = CHANNELS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    map.retain(|_, (_, weak)| weak.strong_count() > 0);
    if let Some((known, weak)) = map.get(&(input, output))
        && *known == identity
        && let Some(shared) = weak.upgrade()
    {
        return Ok(shared);
    }
    let reader = take(input)?;
    let writer = take(output)?;
    let io = Io::new(
        BufReader::new(Reader::new(reader, input)?),
        Writer::new(writer, output)?,
    );
    let shared = Arc::new(Mutex::new(io));
    map.insert((input, output), (identity, Arc::downgrade(&shared)));
    Ok(shared)
}

/// Which open file a descriptor number names now: `(device, inode)` of each end.
type Identity = ((u64, u64), (u64, u64));

fn identity(fd: u32) -> io::Result<(u64, u64)> {
    let raw = RawFd::try_from(fd)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "descriptor out of range"))?;
    // SAFETY: borrowed for one fstat; a number that is not open fails with EBADF.
    let borrowed = unsafe { BorrowedFd::borrow_raw(raw) };
    let stat = rustix::fs::fstat(borrowed)?;
    Ok((stat.st_dev, stat.st_ino))
}

/// Marks inherited descriptor `fd` close-on-exec and returns a close-on-exec duplicate. The
/// original stays open (it may be 0–2, or shared with the embedder's expectations) but no
/// child inherits it.
fn take(fd: u32) -> io::Result<OwnedFd> {
    let raw = RawFd::try_from(fd)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "descriptor out of range"))?;
    // SAFETY: only borrowed for the two calls below; a number that is not open makes them
    // fail with EBADF, which is reported.
    let borrowed = unsafe { BorrowedFd::borrow_raw(raw) };
    rustix::io::fcntl_getfd(borrowed)?;
    if raw > 2 {
        rustix::io::fcntl_setfd(borrowed, rustix::io::FdFlags::CLOEXEC)?;
    }
    Ok(rustix::io::fcntl_dupfd_cloexec(borrowed, 3)?)
}

/// The kinds of descriptor a prompt channel can use: the ones the runtime can wait on.
enum Kind {
    Pipe,
    Socket,
}

fn kind(fd: &OwnedFd, number: u32) -> io::Result<Kind> {
    let stat = rustix::fs::fstat(fd)?;
    match rustix::fs::FileType::from_raw_mode(stat.st_mode) {
        rustix::fs::FileType::Fifo => Ok(Kind::Pipe),
        rustix::fs::FileType::Socket => Ok(Kind::Socket),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("descriptor {number} is a {other:?}, not a pipe or a socket"),
        )),
    }
}

/// The answer side of a descriptor pair.
enum Reader {
    Pipe(tokio::net::unix::pipe::Receiver),
    Socket(tokio::net::UnixStream),
}

impl Reader {
    fn new(fd: OwnedFd, number: u32) -> io::Result<Self> {
        Ok(match kind(&fd, number)? {
            Kind::Pipe => Self::Pipe(tokio::net::unix::pipe::Receiver::from_owned_fd(fd)?),
            Kind::Socket => Self::Socket(socket(fd)?),
        })
    }
}

/// The request side of a descriptor pair.
enum Writer {
    Pipe(tokio::net::unix::pipe::Sender),
    Socket(tokio::net::UnixStream),
}

impl Writer {
    fn new(fd: OwnedFd, number: u32) -> io::Result<Self> {
        Ok(match kind(&fd, number)? {
            Kind::Pipe => Self::Pipe(tokio::net::unix::pipe::Sender::from_owned_fd(fd)?),
            Kind::Socket => Self::Socket(socket(fd)?),
        })
    }
}

fn socket(fd: OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(std)
}

impl tokio::io::AsyncRead for Reader {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(p) => std::pin::Pin::new(p).poll_read(cx, buf),
            Self::Socket(s) => std::pin::Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Writer {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Pipe(p) => std::pin::Pin::new(p).poll_write(cx, buf),
            Self::Socket(s) => std::pin::Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(p) => std::pin::Pin::new(p).poll_flush(cx),
            Self::Socket(s) => std::pin::Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Pipe(p) => std::pin::Pin::new(p).poll_shutdown(cx),
            Self::Socket(s) => std::pin::Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// Starts `program args…` with one end of a socket pair as its stdin and stdout; returns
/// the child (killed when dropped) and the channel over the other end.
pub(super) fn spawn(program: &str, args: &[String]) -> io::Result<(tokio::process::Child, Io)> {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
    let theirs_out = theirs.try_clone()?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(std::process::Stdio::from(OwnedFd::from(theirs)))
        .stdout(std::process::Stdio::from(OwnedFd::from(theirs_out)))
        .kill_on_drop(true);
    // The prompt UI gets its socket on 0 and 1 and nothing else toolgate holds.
    toolgate_core::child::only_standard_descriptors(cmd.as_std_mut());
    let child = cmd.spawn()?;
    // Our copies of the command's end: closed, so that its exit reads as end of stream.
    drop(cmd);
    ours.set_nonblocking(true)?;
    let (r, w) = tokio::net::UnixStream::from_std(ours)?.into_split();
    Ok((child, Io::new(BufReader::new(r), w)))
}
