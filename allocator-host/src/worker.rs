//! A module worker process (see [`crate::isolation`]): it loads one module's library through
//! the registry, then creates, calls and drops its instances as the host asks, until the host
//! closes the channel. A master's executable becomes a worker when its first argument is
//! [`WORKER_ARG`]: its `main` calls [`worker_main`] first thing when
//! [`is_worker_invocation`] says so.
//!
//! This is the layer above both the registry (which decides what runs isolated) and the
//! isolation link (the host's end of the channel), since a worker is a small host of its own.

use std::io::{BufReader, Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;

use allocator_api::abi::Parameter;
use allocator_api::{Allocator, AllocatorOptions, ModuleError, Sorter, SorterConfig};

use crate::hierarchical::HierarchicalAllocator;
use crate::isolation::calls::{Reply, dispatch_allocator, dispatch_sorter};
use crate::isolation::link::{MAX_FRAME, SpinRead, control};
use crate::isolation::sandbox::{Confinement, confine};
use crate::isolation::wire::{DResult, Dec, DecodeError, Enc, Wire};
use crate::isolation::{ProbeEntry, Probed};
pub use crate::isolation::{WORKER_ARG, is_worker_invocation};
use crate::manifest::{LibraryEntry, Manifest, ManifestSource, ModuleEntry, ParameterEntry};
use crate::registry::ModuleRegistry;

/// How long the worker polls for the next request before it sleeps on the socket: during an
/// allocation run the host's calls come microseconds apart.
const WORKER_SPIN: std::time::Duration = std::time::Duration::from_micros(50);

/// The exit code of a worker whose channel broke or carried something it could not decode.
const EXIT_CHANNEL: i32 = 70;

/// Runs this process as a module worker and exits; a master whose modules may run in workers
/// calls it first thing in `main` when [`is_worker_invocation`](crate::is_worker_invocation)
/// says so. The master started this process with the channel as its standard input.
///
/// Never returns. The exit code is 0 when the master closes the channel, 70 when the channel
/// broke or carried something the worker could not decode (said in an error record on the
/// worker's standard error, where its logger writes).
pub fn worker_main() -> ! {
    init_logging();
    // SAFETY: getppid has no preconditions.
    let master = unsafe { libc::getppid() };
    end_with_the_master(master);
    let code = match take_channel().and_then(|channel| serve(channel, master)) {
        Ok(()) => 0,
        Err(e) => {
            // Through this process's own logger (`init_logging`), to its standard error.
            log::error!("the worker's channel to the host failed: {e}");
            EXIT_CHANNEL
        }
    };
    log::logger().flush();
    std::process::exit(code)
}

/// A worker whose master died while a module call runs here would never read the channel
/// again: a thread checks once a second that the master is still its parent (on Linux the
/// sandbox also asks for `SIGKILL` when the parent dies).
fn end_with_the_master(master: libc::pid_t) {
    let _ = std::thread::Builder::new().name("master-watch".into()).spawn(move || {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            // SAFETY: as above; _exit ends the process at once.
            unsafe {
                if libc::getppid() != master {
                    libc::_exit(0);
                }
            }
        }
    });
}

/// Takes the channel from standard input (which then reads `/dev/null`, so that a module
/// reading it cannot steal the host's requests).
fn take_channel() -> Result<UnixStream, String> {
    // SAFETY: plain descriptor calls on descriptors this process owns.
    unsafe {
        let fd = libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3);
        if fd < 0 {
            return Err(format!(
                "no channel on standard input: {}",
                std::io::Error::last_os_error()
            ));
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::close(null);
        }
        Ok(UnixStream::from_raw_fd(fd))
    }
}

/// A module instance the worker holds.
enum Instance {
    Allocator(Box<dyn Allocator>),
    Sorter(Box<dyn Sorter>),
}

/// Serves the channel `stream` from the master whose pid is `master`: the first request says
/// what to load and how to confine this process before (see [`confine`]), then every call.
fn serve(stream: UnixStream, master: libc::pid_t) -> Result<(), String> {
    let mut reader = BufReader::with_capacity(1 << 16, SpinRead::new(stream, WORKER_SPIN));
    let mut frame = Vec::new();
    let mut out = Enc::default();
    if !read_frame(&mut reader, &mut frame)? {
        return Ok(());
    }
    let mut d = Dec::new(&frame);
    let (_, method) = (d.u32().map_err(text)?, d.u8().map_err(text)?);
    if method == control::PROBE {
        reply(&mut out, |e| {
            let answered = crate::isolation::answer_probe(&mut d, e, |l, label, c, entries| {
                probe(l, label, &c, master, entries)
            });
            if let Err(error) = answered {
                e.u8(1);
                e.str(&format!("the worker could not read the request: {error}"));
            }
        });
        reader.get_ref().stream().write_all(&out.buf).map_err(|e| e.to_string())?;
        return Ok(());
    }
    let (module, loaded) = if method == control::HOST {
        // The built-in allocator's worker: its sorter modules, loaded here.
        let hosted = read_hosted(&mut d).map_err(text)?;
        let confinement = Confinement::get(&mut d).map_err(text)?;
        let libraries: Vec<&Path> = hosted.iter().map(|(l, _)| Path::new(l.as_str())).collect();
        let confined = confine(&confinement, master, &libraries);
        (String::new(), confined.and_then(|()| load_hosted(hosted)))
    } else {
        let library = d.str().map_err(text)?.to_owned();
        let module = d.str().map_err(text)?.to_owned();
        let parameters = Vec::<Parameter>::get(&mut d).map_err(text)?;
        let confinement = Confinement::get(&mut d).map_err(text)?;
        let library = Path::new(&library);
        let loaded = confine(&confinement, master, &[library])
            .and_then(|()| load(library, &module, &parameters));
        (module, loaded)
    };
    let registry = match loaded {
        Ok(registry) => registry,
        Err(message) => {
            reply(&mut out, |e| Err::<(), _>(ModuleError::failed(message)).put_reply(e));
            reader.get_ref().stream().write_all(&out.buf).map_err(|e| e.to_string())?;
            return Ok(());
        }
    };
    reply(&mut out, |e| Ok::<(), ModuleError>(()).put_reply(e));
    let mut instances: Vec<Option<Instance>> = Vec::new();
    loop {
        if reader.buffer().is_empty() && !out.buf.is_empty() {
            reader.get_ref().stream().write_all(&out.buf).map_err(|e| e.to_string())?;
            out.buf.clear();
        }
        if !read_frame(&mut reader, &mut frame)? {
            return Ok(());
        }
        let mut d = Dec::new(&frame);
        let handled = reply_to(&mut d, &mut out, &registry, &module, &mut instances);
        handled.map_err(text)?;
    }
}

fn text(e: DecodeError) -> String {
    e.to_string()
}

/// Appends one reply frame written by `body`.
fn reply(out: &mut Enc, body: impl FnOnce(&mut Enc)) {
    let at = out.buf.len();
    out.start_frame();
    out.u32(0);
    body(out);
    let len = (out.buf.len() - at - 4) as u32;
    out.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// Handles one request and appends its reply.
fn reply_to(
    d: &mut Dec<'_>,
    out: &mut Enc,
    registry: &ModuleRegistry,
    module: &str,
    instances: &mut Vec<Option<Instance>>,
) -> DResult<()> {
    let instance = d.u32()? as usize;
    let method = d.u8()?;
    let at = out.buf.len();
    out.start_frame();
    out.u32(0);
    if instance == 0 {
        control_call(d, out, method, registry, module, instances)?;
    } else {
        match instances.get_mut(instance) {
            Some(Some(Instance::Allocator(a))) => dispatch_allocator(&mut **a, method, d, out)?,
            Some(Some(Instance::Sorter(s))) => dispatch_sorter(&mut **s, method, d, out)?,
            _ => return Err(DecodeError("an unknown instance")),
        }
    }
    if !d.is_empty() {
        return Err(DecodeError("bytes after the arguments"));
    }
    let len = (out.buf.len() - at - 4) as u32;
    out.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
    Ok(())
}

fn control_call(
    d: &mut Dec<'_>,
    out: &mut Enc,
    method: u8,
    registry: &ModuleRegistry,
    module: &str,
    instances: &mut Vec<Option<Instance>>,
) -> DResult<()> {
    let id = d.u32()? as usize;
    if id == 0 || id > instances.len() + (1 << 20) {
        return Err(DecodeError("an instance id out of range"));
    }
    if instances.len() <= id {
        instances.resize_with(id + 1, || None);
    }
    let created = match method {
        control::CREATE_ALLOCATOR => {
            let options = AllocatorOptions::get(d)?;
            registry.raw_allocator(module, &options).map(Instance::Allocator)
        }
        control::CREATE_SORTER => {
            let config = SorterConfig::get(d)?;
            registry.raw_sorter(module, &config).map(Instance::Sorter)
        }
        control::CREATE_BUILTIN => {
            let options = AllocatorOptions::get(d)?;
            builtin(registry, &options).map(Instance::Allocator)
        }
        control::DROP => {
            drop(instances[id].take());
            Ok::<(), ModuleError>(()).put_reply(out);
            return Ok(());
        }
        _ => return Err(DecodeError("an unknown control call")),
    };
    match created {
        Ok(instance) => {
            instances[id] = Some(instance);
            Ok::<(), ModuleError>(()).put_reply(out);
        }
        Err(e) => Err::<(), _>(e).put_reply(out),
    }
    Ok(())
}

/// Reads one frame; `false` at the end of the channel (the host is done).
fn read_frame(reader: &mut BufReader<SpinRead>, frame: &mut Vec<u8>) -> Result<bool, String> {
    let mut len = [0u8; 4];
    match reader.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e.to_string()),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err("a request longer than any the host sends".into());
    }
    frame.clear();
    frame.resize(len, 0);
    reader.read_exact(frame).map_err(|e| e.to_string())?;
    Ok(true)
}

/// The sorter modules of a `HOST` request: library, module, parameters each.
fn read_hosted(d: &mut Dec<'_>) -> DResult<Vec<(String, ProbeEntry)>> {
    let n = d.len()?;
    (0..n)
        .map(|_| {
            let library = d.str()?.to_owned();
            let name = Some(d.str()?.to_owned());
            let parameters = Vec::<Parameter>::get(d)?;
            Ok((library, ProbeEntry { name, parameters }))
        })
        .collect()
}

/// Loads the sorter modules of a built-in allocator that runs here, each library once.
fn load_hosted(hosted: Vec<(String, ProbeEntry)>) -> Result<ModuleRegistry, String> {
    let mut libraries: Vec<(String, Vec<ProbeEntry>)> = Vec::new();
    for (library, entry) in hosted {
        match libraries.iter_mut().find(|(l, _)| *l == library) {
            Some((_, entries)) => entries.push(entry),
            None => libraries.push((library, vec![entry])),
        }
    }
    let manifest = Manifest {
        libraries: libraries
            .into_iter()
            .map(|(library, entries)| library_entry(Path::new(&library), entries))
            .collect(),
    };
    let source = ManifestSource { label: "module worker".to_owned(), base: "/".into() };
    let mut registry = ModuleRegistry::new();
    registry.load_manifest(&manifest, &source).map_err(|e| e.to_string())?;
    Ok(registry)
}

/// The built-in allocator with the sorters `options` names, created from this worker's
/// registry: the loaded sorter modules run in-process here, with the checks and wrappers they
/// have in the master's process (so their refusals and panics read as there).
fn builtin(
    registry: &ModuleRegistry,
    options: &AllocatorOptions,
) -> Result<Box<dyn Allocator>, ModuleError> {
    let factory = |name: &str, flag: &str| {
        registry.sorter_factory(name, flag).map_err(|e| ModuleError::failed(e.to_string()))
    };
    let role = factory(&options.role_sorter, "--role_sorter")?;
    let framework = factory(&options.framework_sorter, "--framework_sorter")?;
    let allocator =
        HierarchicalAllocator::new(options, role, framework).map_err(ModuleError::failed)?;
    Ok(Box::new(allocator))
}

/// Loads the one library and module through the registry's loader and checks.
fn load(library: &Path, module: &str, parameters: &[Parameter]) -> Result<ModuleRegistry, String> {
    let entry = ProbeEntry { name: Some(module.to_owned()), parameters: parameters.to_vec() };
    check(library, "module worker", vec![entry])
}

/// Loads `library` and the modules of `entries` as a manifest labelled `label` would, in
/// this process (a worker's registry isolates nothing).
fn check(library: &Path, label: &str, entries: Vec<ProbeEntry>) -> Result<ModuleRegistry, String> {
    let manifest = Manifest { libraries: vec![library_entry(library, entries)] };
    let source = ManifestSource { label: label.to_owned(), base: "/".into() };
    let mut registry = ModuleRegistry::new();
    registry.load_manifest(&manifest, &source).map_err(|e| e.to_string())?;
    Ok(registry)
}

/// A manifest's entry for `library` and the modules `entries` name there.
fn library_entry(library: &Path, entries: Vec<ProbeEntry>) -> LibraryEntry {
    LibraryEntry {
        file: Some(library.to_string_lossy().into_owned()),
        name: None,
        modules: entries
            .into_iter()
            .map(|entry| ModuleEntry {
                name: entry.name,
                parameters: (entry.parameters.iter())
                    .map(|p| ParameterEntry { key: p.key.to_string(), value: p.value.to_string() })
                    .collect(),
            })
            .collect(),
    }
}

/// A probe's check: the confinement, then the library and its named modules, reported.
fn probe(
    library: &str,
    label: &str,
    confinement: &Confinement,
    master: libc::pid_t,
    entries: Vec<ProbeEntry>,
) -> Result<Vec<Probed>, String> {
    confine(confinement, master, &[Path::new(library)])?;
    let registry = check(Path::new(library), label, entries)?;
    Ok(registry
        .modules()
        .map(|m| Probed {
            name: m.name.clone(),
            kind: m.kind,
            api_version: m.api_version.clone(),
            author: m.author.clone(),
            description: m.description.clone(),
        })
        .collect())
}

/// The worker process's logger: its records (the worker's own and those its modules forward)
/// go to its standard error, at the level `RUST_LOG` names (`warn` if it names none), marked
/// as the worker's. This is the process's logger backend, the one place a worker writes to
/// standard error.
fn init_logging() {
    struct Stderr(log::LevelFilter);
    impl log::Log for Stderr {
        fn enabled(&self, m: &log::Metadata<'_>) -> bool {
            m.level() <= self.0
        }
        fn log(&self, r: &log::Record<'_>) {
            if self.enabled(r.metadata()) {
                // A failed write has nowhere else to go.
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "[module worker {} {}] {}",
                    r.level(),
                    r.target(),
                    r.args()
                );
            }
        }
        fn flush(&self) {}
    }
    let level = std::env::var("RUST_LOG")
        .ok()
        .and_then(|v| v.parse::<log::LevelFilter>().ok())
        .unwrap_or(log::LevelFilter::Warn);
    if log::set_boxed_logger(Box::new(Stderr(level))).is_ok() {
        log::set_max_level(level);
    }
}
