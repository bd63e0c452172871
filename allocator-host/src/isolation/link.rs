//! The host's end of one worker: the process, the channel, and what a dead worker means.
//!
//! One worker serves every instance of one module. Calls are frames on a Unix socket pair;
//! each request gets exactly one reply, in order. A *posted* request (a call whose answer the
//! caller does not need at once) is queued in the output buffer and its reply is read with
//! the next call's, so a run of posted calls costs one round trip. A posted call that failed is
//! reported by the next call that can report an error.
//!
//! Any failure of the channel (end of file, a reset, a reply that does not decode, no reply
//! within the watchdog's timeout) ends the worker: the process is killed if it still runs, its
//! exit status is collected, and every later call answers the same fault.

use std::io::{BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use allocator_api::ModuleError;

use super::wire::{DResult, Dec, DecodeError, Enc, Wire};
use super::{Spec, WORKER_ARG};
use crate::watchdog::Watchdog;

/// The longest frame either side accepts (a reply holding a million offers is far below it).
pub(crate) const MAX_FRAME: usize = 1 << 30;

/// How long the host polls for a reply before it sleeps on the socket: most replies come
/// within microseconds, and waking a sleeping process costs more than that.
const HOST_SPIN: Duration = Duration::from_micros(20);

/// Posted calls queued before their replies are collected, at most.
const MAX_POSTED: usize = 1024;

/// Control requests (instance 0).
pub(crate) mod control {
    /// The first request: load the library and one module (`Spec`).
    pub const LOAD: u8 = 0;
    /// The first request, instead of `LOAD`: check a library and the modules a manifest names
    /// there, report them, and exit (see `Isolator::probe`).
    pub const PROBE: u8 = 4;
    /// Create an allocator instance: id, `AllocatorOptions`.
    pub const CREATE_ALLOCATOR: u8 = 1;
    /// Create a sorter instance: id, `SorterConfig`.
    pub const CREATE_SORTER: u8 = 2;
    /// Drop an instance: id.
    pub const DROP: u8 = 3;
    /// The first request, instead of `LOAD`: load the sorter modules of a built-in allocator
    /// that runs in the worker (`Spec::put_hosted`).
    pub const HOST: u8 = 5;
    /// Create the built-in allocator with the loaded sorter modules: id, `AllocatorOptions`
    /// (whose `role_sorter` and `framework_sorter` name them).
    pub const CREATE_BUILTIN: u8 = 6;
}

/// A shared handle on one worker (every instance of the module holds one).
#[derive(Clone)]
pub(crate) struct Link(Arc<Mutex<Worker>>);

pub(crate) struct Worker {
    /// `module 'name'`, for messages.
    module: String,
    child: Child,
    reader: BufReader<SpinRead>,
    out: Enc,
    /// The names of the posted calls whose replies are still to be read.
    posted: Vec<&'static str>,
    /// The first posted call that failed, not reported yet.
    deferred: Option<ModuleError>,
    /// Why the worker is gone, once it is.
    dead: Option<String>,
    timeout_ms: Option<f64>,
    memory_limit_mb: Option<u64>,
    watchdog: Watchdog,
    next_instance: u32,
    /// Round trips and posted calls so far (logged when the worker ends).
    round_trips: u64,
    posted_calls: u64,
    /// The last reply read (kept: an allocation run's reply is megabytes).
    frame: Vec<u8>,
}

impl Link {
    /// Starts a worker for `spec` and has it load the module's library.
    pub(crate) fn spawn(spec: &Spec, watchdog: &Watchdog) -> Result<Link, String> {
        let link = Link::start(spec, watchdog)?;
        let (first, put): (u8, fn(&Spec, &mut Enc)) = if spec.hosted.is_empty() {
            (control::LOAD, Spec::put)
        } else {
            (control::HOST, Spec::put_hosted)
        };
        link.call(0, first, "load", |e| put(spec, e), reply_result)
            .and_then(|loaded| loaded)
            .map_err(|e| e.message.to_string())?;
        Ok(link)
    }

    /// Starts a worker for `spec`; its first request is the caller's (a load or a probe).
    pub(crate) fn start(spec: &Spec, watchdog: &Watchdog) -> Result<Link, String> {
        let exe = match &spec.worker_exe {
            Some(exe) => exe.clone(),
            None => {
                std::env::current_exe().map_err(|e| format!("cannot find the executable: {e}"))?
            }
        };
        // A worker that runs as the master's user could otherwise trace the master or read
        // its memory through /proc.
        super::sandbox::protect_master();
        let (host, child_end) =
            UnixStream::pair().map_err(|e| format!("cannot create the channel: {e}"))?;
        for end in [&host, &child_end] {
            widen(end);
        }
        use std::os::unix::process::CommandExt;
        // Its own process group: a Ctrl-C meant for the master does not kill the worker (the
        // worker ends when the master closes the channel, or dies).
        let child = Command::new(&exe)
            .process_group(0)
            .arg(WORKER_ARG)
            .arg(&spec.module)
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(child_end)))
            .stdout(Stdio::from(std::io::stderr()))
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let (_, timeout_ms) = watchdog.limits_ms();
        if let Some(ms) = timeout_ms {
            let _ = host.set_read_timeout(Some(Duration::from_secs_f64(ms / 1e3)));
        }
        let worker = Worker {
            module: spec.label.clone(),
            child,
            reader: BufReader::with_capacity(1 << 16, SpinRead::new(host, HOST_SPIN)),
            out: Enc::default(),
            posted: Vec::new(),
            deferred: None,
            dead: None,
            timeout_ms,
            memory_limit_mb: spec.confinement.memory_limit_mb,
            watchdog: watchdog.clone(),
            next_instance: 1,
            round_trips: 0,
            posted_calls: 0,
            frame: Vec::new(),
        };
        Ok(Link(Arc::new(Mutex::new(worker))))
    }

    fn lock(&self) -> MutexGuard<'_, Worker> {
        // A panic while holding the lock cannot leave the worker half-written in a way that
        // matters: the next call fails on the channel and ends the worker.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `true` once the worker is gone.
    pub(crate) fn is_dead(&self) -> bool {
        self.lock().dead.is_some()
    }

    /// A fresh instance id.
    pub(crate) fn new_instance(&self) -> u32 {
        let mut w = self.lock();
        let id = w.next_instance;
        w.next_instance += 1;
        id
    }

    /// Sends one request and waits for its reply (after the replies of the posted calls).
    pub(crate) fn call<R>(
        &self,
        instance: u32,
        method: u8,
        name: &'static str,
        args: impl FnOnce(&mut Enc),
        reply: impl FnOnce(&mut Dec<'_>) -> DResult<R>,
    ) -> Result<R, ModuleError> {
        let mut w = self.lock();
        w.gone()?;
        let start = w.watchdog.limits_ms().0.map(|_| Instant::now());
        w.frame(instance, method, args);
        w.posted.push(name);
        let r = w.exchange(reply);
        if let Some(start) = start {
            let module = w.module.clone();
            w.watchdog.note_call(&module, name, start.elapsed().as_secs_f64() * 1e3);
        }
        r
    }

    /// Queues one request whose reply is read later; fails only when the worker is gone or an
    /// earlier posted call failed.
    pub(crate) fn post(
        &self,
        instance: u32,
        method: u8,
        name: &'static str,
        args: impl FnOnce(&mut Enc),
    ) -> Result<(), ModuleError> {
        let mut w = self.lock();
        w.gone()?;
        if let Some(e) = w.deferred.take() {
            return Err(e);
        }
        w.frame(instance, method, args);
        w.posted.push(name);
        if w.posted.len() >= MAX_POSTED
            && let Err(e) = w.exchange(reply_result)?
        {
            w.deferred.get_or_insert(ModuleError::failed(format!("{name}: {e}")));
        }
        Ok(())
    }

    /// The failure of a posted call not reported yet, if any.
    pub(crate) fn take_deferred(&self) -> Option<ModuleError> {
        self.lock().deferred.take()
    }

    /// Drops an instance in the worker (posted; nothing to report).
    pub(crate) fn drop_instance(&self, instance: u32) {
        let mut w = self.lock();
        if w.dead.is_none() {
            w.frame(0, control::DROP, |e| e.u32(instance));
            w.posted.push("drop");
        }
    }
}

/// A socket whose reads poll (non-blocking) for up to `spin` before they block: a round trip
/// between two processes that are both awake costs a few microseconds, one that wakes a
/// sleeping process several times that.
pub(crate) struct SpinRead {
    stream: UnixStream,
    spin: Duration,
}

impl SpinRead {
    /// Reads from `stream`, polling for up to `spin` first.
    pub(crate) fn new(stream: UnixStream, spin: Duration) -> SpinRead {
        let spin = std::env::var("ALLOCATOR_ISOLATION_SPIN_US")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(spin, Duration::from_micros);
        SpinRead { stream, spin }
    }

    /// The socket (for writing).
    pub(crate) fn stream(&self) -> &UnixStream {
        &self.stream
    }
}

impl Read for SpinRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::fd::AsRawFd;
        let start = Instant::now();
        loop {
            // SAFETY: reads at most `buf.len()` bytes into `buf` from a socket this owns.
            let n = unsafe {
                libc::recv(
                    self.stream.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = std::io::Error::last_os_error();
            if !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted)
            {
                return Err(e);
            }
            if start.elapsed() >= self.spin {
                return (&self.stream).read(buf);
            }
            std::thread::yield_now();
        }
    }
}

/// Asks for 4 MiB socket buffers (the system may grant less), so that an allocation run's
/// reply crosses in a few writes rather than hundreds.
fn widen(socket: &UnixStream) {
    use std::os::fd::AsRawFd;
    let size: libc::c_int = 4 << 20;
    for option in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
        // SAFETY: sets an integer option of a socket this process owns.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

/// A reply that is a `Result<()>`: tag 0, or tag 1 and the error.
pub(crate) fn reply_result(d: &mut Dec<'_>) -> DResult<allocator_api::Result<()>> {
    match d.u8()? {
        0 => Ok(Ok(())),
        1 => Ok(Err(ModuleError::get(d)?)),
        _ => Err(DecodeError("a bad reply tag")),
    }
}

impl Worker {
    fn gone(&self) -> Result<(), ModuleError> {
        match &self.dead {
            Some(why) => Err(ModuleError::failed(format!("{why} (the worker is gone)"))),
            None => Ok(()),
        }
    }

    /// Appends a request frame: length, instance, method, arguments.
    fn frame(&mut self, instance: u32, method: u8, args: impl FnOnce(&mut Enc)) {
        let at = self.out.buf.len();
        self.out.start_frame();
        self.out.u32(0);
        self.out.u32(instance);
        self.out.u8(method);
        args(&mut self.out);
        let len = (self.out.buf.len() - at - 4) as u32;
        self.out.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }

    /// Writes what is queued and reads one reply per queued request; the last one is the
    /// caller's, decoded by `reply`.
    fn exchange<R>(
        &mut self,
        reply: impl FnOnce(&mut Dec<'_>) -> DResult<R>,
    ) -> Result<R, ModuleError> {
        let mut frame = std::mem::take(&mut self.frame);
        let r = self.exchange_in(&mut frame, reply);
        self.frame = frame;
        r
    }

    fn exchange_in<R>(
        &mut self,
        frame: &mut Vec<u8>,
        reply: impl FnOnce(&mut Dec<'_>) -> DResult<R>,
    ) -> Result<R, ModuleError> {
        let first = self.posted.first().copied().unwrap_or("a call");
        self.round_trips += 1;
        self.posted_calls += self.posted.len().saturating_sub(1) as u64;
        if let Err(e) = self.reader.get_ref().stream().write_all(&self.out.buf) {
            self.out.buf.clear();
            return Err(self.end(first, Some(e)));
        }
        self.out.buf.clear();
        let posted = std::mem::take(&mut self.posted);
        let (last, earlier) = posted.split_last().expect("at least the call itself");
        // The worker answers a batch at once: a worker that dies in it answers none of it, so
        // the call named is the one the caller waits for, and the queued ones are counted.
        let during = match earlier.len() {
            0 => (*last).to_owned(),
            1 => format!("{last} (or the {} call queued before it)", earlier[0]),
            n => format!("{last} (or one of the {n} calls queued before it)"),
        };
        for name in earlier {
            let n = self.read_frame(&during, frame)?;
            match reply_result(&mut Dec::new(&frame[..n])) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    if self.deferred.is_none() {
                        let call = if *name == "drop" { "drop" } else { name };
                        self.deferred = Some(ModuleError::failed(format!(
                            "{call} (answered with a later call): {e}"
                        )));
                    }
                }
                Err(_) => return Err(self.malformed(name)),
            }
        }
        let n = self.read_frame(&during, frame)?;
        let mut d = Dec::new(&frame[..n]);
        match reply(&mut d) {
            Ok(r) if d.is_empty() => Ok(r),
            _ => Err(self.malformed(last)),
        }
    }

    /// Reads one reply frame into `frame[..n]` and returns `n`. `frame` keeps its largest
    /// length; it grows only as the bytes arrive, so a worker cannot make the host commit
    /// memory for a frame it announces and never sends.
    fn read_frame(&mut self, during: &str, frame: &mut Vec<u8>) -> Result<usize, ModuleError> {
        let mut len = [0u8; 4];
        if let Err(e) = self.reader.read_exact(&mut len) {
            return Err(self.end(during, Some(e)));
        }
        let len = u32::from_le_bytes(len) as usize;
        if len > MAX_FRAME {
            return Err(self.malformed(during));
        }
        let read = if len <= frame.len() {
            self.reader.read_exact(&mut frame[..len])
        } else {
            frame.clear();
            match (&mut self.reader).take(len as u64).read_to_end(frame) {
                Ok(n) if n == len => Ok(()),
                Ok(_) => Err(std::io::ErrorKind::UnexpectedEof.into()),
                Err(e) => Err(e),
            }
        };
        match read {
            Ok(()) => Ok(len),
            Err(e) => Err(self.end(during, Some(e))),
        }
    }

    fn malformed(&mut self, during: &str) -> ModuleError {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.fail(format!("worker for {} sent a malformed reply to {during}; killed", self.module))
    }

    /// Ends the worker after the channel failed during `during`: kills it if it still runs
    /// (a hang past the timeout, or a closed channel), and says why it is gone.
    fn end(&mut self, during: &str, error: Option<std::io::Error>) -> ModuleError {
        let timed_out = error.as_ref().is_some_and(|e| {
            matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
        });
        if timed_out {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let ms = self.timeout_ms.unwrap_or(0.0);
            return self.fail(format!(
                "worker for {} did not answer within {ms} ms (--module_call_timeout_ms) during {during}; killed",
                self.module
            ));
        }
        // The worker closed the channel: it is ending, or it closed it on purpose.
        let deadline = Instant::now() + Duration::from_secs(2);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                _ => break None,
            }
        };
        let cause = match status {
            Some(status) => describe_exit(status, self.memory_limit_mb),
            None => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                "closed its channel and was killed".to_owned()
            }
        };
        self.fail(format!("worker for {} {cause} during {during}", self.module))
    }

    fn fail(&mut self, why: String) -> ModuleError {
        log::info!("{why}");
        self.dead = Some(why.clone());
        self.posted.clear();
        ModuleError::failed(why)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        log::info!(
            "worker for {}: {} round trips, {} calls posted with them",
            self.module,
            self.round_trips,
            self.posted_calls
        );
        if self.dead.is_none() {
            // The instances are gone; nothing the worker does now matters.
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// `killed by SIGSEGV`, `exited with code 0`; with a memory limit, a death that running out
/// of memory causes says so.
fn describe_exit(status: std::process::ExitStatus, memory_limit_mb: Option<u64>) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        let name = signal_name(signal);
        let core = if status.core_dumped() { ", core dumped" } else { "" };
        let memory = match memory_limit_mb {
            Some(mb) if matches!(signal, libc::SIGABRT | libc::SIGKILL) => {
                format!(" (perhaps out of memory: --module_memory_limit_mb {mb})")
            }
            _ => String::new(),
        };
        let sandbox = if signal == libc::SIGSYS {
            " (a system call the worker's sandbox forbids)"
        } else {
            ""
        };
        return format!("killed by {name}{core}{memory}{sandbox}");
    }
    match status.code() {
        Some(code) => format!("exited with code {code}"),
        None => format!("ended ({status})"),
    }
}

fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {signal}"),
    };
    name.to_owned()
}
