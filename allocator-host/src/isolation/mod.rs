//! Process isolation: a module's instances run in a worker process, so that nothing the module
//! does — `abort()`, a null dereference, `exit(0)`, a panic while panicking, unbounded
//! allocation, a hang — can take the master down.
//!
//! # How it works
//!
//! For an isolated module, the [registry](crate::ModuleRegistry) starts one worker process per
//! module (the running executable, with [`WORKER_ARG`] as its first argument) and talks to it
//! over a Unix socket pair with a compact binary encoding of the calls (length-prefixed frames;
//! see `wire.rs`). The worker loads the same library through the same loader and checks, and
//! creates and calls the instances the host asks for. The module code and ABI are unchanged.
//!
//! The host holds [`IsolatedAllocator`] and [`IsolatedSorter`] proxies, which implement the
//! plain [`Allocator`](allocator_api::Allocator) and [`Sorter`](allocator_api::Sorter) traits:
//! to the rest of the host an isolated module is one more `Box<dyn Allocator>` or sorter
//! factory. When the worker dies (a signal, an exit, an out-of-memory kill) or does not answer
//! within the watchdog's timeout (it is then killed), the call in progress and every later
//! one return a fault [`ModuleError`] naming the module, the call
//! and the cause (`worker for module 'x' killed by SIGSEGV during allocate`), so the host's
//! `--on_module_failure` policy applies as for any other module fault.
//!
//! When the built-in allocator runs with an isolated sorter module
//! ([`ModuleRegistry::create_builtin_in_worker`]), the allocator itself runs in a worker
//! beside its sorter modules (the first request is then `HOST`: load every sorter module of
//! the two; then `CREATE_BUILTIN`), which it calls in-process there. The host holds an
//! [`IsolatedAllocator`] for it: one round trip per allocator call (`allocate` once per run)
//! instead of two or more per agent, and a sorter's fatal fault kills only that worker, seen
//! by the host as a fault of the allocator call it happened in (`worker for the built-in
//! allocator with sorter module 'x' killed by SIGSEGV during allocate`).
//!
//! Sorter proxies ([`IsolatedSorter`]) remain for an isolated sorter created on its own
//! ([`ModuleRegistry::create_sorter`]; the sorter benchmarks) and for sorters given to an
//! in-process built-in allocator ([`ModuleRegistry::sorter_factory`]: `set_sorters` switching
//! to an isolated module at run time). Those made for the built-in allocator queue the
//! calls that answer only success or failure (`add`, `remove`, `activate`, `deactivate`,
//! `update_weight`, `add_agent`, `remove_agent`, and the per-offer `allocated`, `unallocated`,
//! `update`) and collect their answers with the next call that needs one: the built-in
//! allocator treats any error of those as a fault, so a failure reported one call late changes
//! nothing but the call it is reported with (the fault's fallback or restart rebuilds the
//! sorters from the built-in's own records either way). `sort_prefix` and `keep_scalars_only`
//! go over the wire like the other calls: the worker asks the module itself (an ABI 2 library's
//! answer, an ABI 1 library's trait defaults).
//!
//! The master never maps an isolated library: when every module a manifest entry names from
//! a library is isolated, the registry has a short-lived worker check it (`Isolator::probe`:
//! abi_stable's checks, the library's `init`, the modules' names, kinds, API versions and
//! `compatible()`) and report its modules, or the loading error's line as the master would
//! have written it. A library whose load-time code kills the process kills only that worker.
//! The factories and every call run only in the module's worker.
//!
//! Each side polls the socket briefly before it sleeps on it (20 µs the host, 50 µs the
//! worker): a reply or the next request usually comes sooner than a sleeping process wakes.
//! The environment variable `ALLOCATOR_ISOLATION_SPIN_US` sets both (0: never poll).
//! Workers run in their own process group (a Ctrl-C meant for the master leaves them to end
//! when the master closes the channel) and end when the master is gone.
//!
//! # The sandbox
//!
//! *A module that misbehaves on purpose* is contained too. A worker confines itself after it
//! reads its first request and before it maps any module library, so a library's load-time
//! constructors already run confined (the order is in `sandbox.rs`):
//!
//! * **Its user.** Where the master runs as root, the worker drops every supplementary group
//!   and switches to `nobody` (uid and gid 65534), or to what
//!   [`IsolationSettings::worker_user`] says (`--module_worker_user UID:GID`, or `master` to
//!   keep the master's). Every library must be readable by that user; one that is not is a
//!   load error that says so (`library '…' cannot be read by the module worker's user (uid
//!   65534, gid 65534; --module_worker_user): Permission denied`).
//! * **Linux:** a parent-death signal (`SIGKILL`), not dumpable, `no_new_privs`, and three
//!   seccomp filters on every thread of the worker (their rules: `filters` in `sandbox.rs`):
//!   * *killed by `SIGSYS`* — a fault like a crash, reported as `worker for module 'm' killed
//!     by SIGSYS (a system call the worker's sandbox forbids) during allocate`: signalling
//!     any process but the worker itself (`kill`, `tgkill`, `rt_sigqueueinfo`,
//!     `rt_tgsigqueueinfo` with another pid; `tkill`, `pidfd_send_signal`), tracing
//!     (`ptrace`), reading or writing another process's memory (`process_vm_readv`,
//!     `process_vm_writev`), running a program (`execve`, `execveat`), creating a process
//!     (`fork`, `vfork`, `clone` without `CLONE_THREAD`), taking another process's descriptor
//!     (`pidfd_getfd`);
//!   * *an allow-list*: every other call fails with `EPERM` unless a module that computes
//!     offers needs it (memory, threads, futexes, time, randomness, its own signals, reading
//!     and writing the descriptors it has, reading files). So a module cannot create a
//!     socket or connect anywhere, open a file to write, create or truncate it, remove,
//!     rename or change files, set up `io_uring`, `bpf`, `perf_event_open`, namespaces,
//!     mounts or System V IPC, change another process's limits, scheduling or priority,
//!     point `SIGIO` at another process (`F_SETOWN`), type into a terminal (`TIOCSTI`), or
//!     make the standard error it shares with the master non-blocking; `clone3` answers
//!     `ENOSYS`, so threads are created with `clone`, whose flags a filter can read.
//! * **The master** makes itself not dumpable before it starts its first worker: a process of
//!   its user can then neither trace it nor read its memory, environment or descriptors
//!   through `/proc` (nor can it leave a core dump).
//!
//! So a worker cannot signal, trace or write into the master or any other process, run a
//! program, or reach the network. What a module can still do: read every file its user can
//! read (the libraries are mapped inside the sandbox; as `nobody`, what anyone may read; as
//! the master's own user, that user's files); write to the descriptors it has (standard error,
//! shared with the master; the channel, whose every reply the master checks); spend CPU until
//! `--module_call_timeout_ms`, memory until `--module_memory_limit_mb`, and create threads
//! without a bound; answer with offers the master's guard then refuses. A worker that cannot
//! confine itself (a kernel without seccomp) refuses to load the module: the module fails to
//! load or to be created, as a module fault.
//!
//! *An allow-list, not a deny-list,* because what reaches outside a process is not a short
//! list: `io_uring` performs opens and connects that no filter sees, `F_SETOWN` and `TIOCSTI`
//! reach other processes through a descriptor, and calls added to the kernel later would pass
//! a deny-list unnoticed. The price: a module that needs a call the list lacks gets `EPERM`
//! (an error it can handle, not a kill), and the list is per architecture (x86-64, aarch64 and
//! riscv64, as the `seccompiler` crate compiles them). With the seccomp action cache (Linux
//! 5.11 and later) the calls the filters allow whatever their arguments — every call on the
//! channel — cost nothing more; see `BENCHMARKS.md` for the measured cost.
//!
//! *The parent-death signal follows the thread that started the worker* (Linux sends it when
//! that thread ends): workers start on the thread that creates an isolated module's first
//! instance, and a master whose starting thread ends before the master does sees that worker
//! killed (a fault of the next call; `restart` starts a fresh one). The worker also checks
//! once a second that its parent is alive, as on every system.
//!
//! On other systems than Linux the sandbox is the memory limit and the switch of user only.
//!
//! # Embedding
//!
//! A master that embeds this crate and isolates modules must let its executable act as the
//! worker: call [`worker_main`](crate::worker_main) first thing in `main` when
//! [`is_worker_invocation`] says so (or point [`IsolationSettings::worker_exe`] at a binary
//! that does):
//!
//! ```no_run
//! // First thing in `main`:
//! if allocator_host::is_worker_invocation() {
//!     allocator_host::worker_main(); // never returns
//! }
//! // … the master …
//! ```
//!
//! [`ModuleRegistry::sorter_factory`]: crate::ModuleRegistry::sorter_factory
//! [`ModuleRegistry::create_sorter`]: crate::ModuleRegistry::create_sorter
//! [`ModuleRegistry::create_builtin_in_worker`]: crate::ModuleRegistry::create_builtin_in_worker

pub(crate) mod calls;
pub(crate) mod link;
pub(crate) mod sandbox;
pub(crate) mod wire;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use allocator_api::abi::{ModuleKind, Parameter};
use allocator_api::{AllocatorOptions, ModuleError, SorterConfig};

pub use calls::{IsolatedAllocator, IsolatedSorter};
pub use sandbox::WorkerUser;

use crate::watchdog::Watchdog;
use link::{Link, control, reply_result};
use sandbox::Confinement;
use wire::{DResult, Dec, Enc, Wire};

/// The first argument that makes the master's executable a module worker (see
/// [`worker_main`](crate::worker::worker_main)).
pub const WORKER_ARG: &str = "__module-worker";

/// The manifest module parameter that chooses a module's isolation (`none` or `process`); it
/// is the host's, and is not passed to the module's factory.
pub const ISOLATION_PARAMETER: &str = "isolation";

/// `true` when this process was started as a module worker: a master that isolates a module
/// starts its own executable again, with a first argument reserved for this. Its `main` then
/// calls [`worker_main`](crate::worker_main) first thing.
pub fn is_worker_invocation() -> bool {
    std::env::args_os().nth(1).is_some_and(|a| a == WORKER_ARG)
}

/// Where a module's instances run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Isolation {
    /// In the master's process (the fastest; a fatal fault in the module is fatal to the
    /// master).
    #[default]
    None,
    /// In a worker process of its own (the master survives whatever the module does).
    Process,
}

impl std::str::FromStr for Isolation {
    type Err = String;
    /// `none` or `process`.
    fn from_str(s: &str) -> Result<Isolation, String> {
        match s {
            "none" => Ok(Isolation::None),
            "process" => Ok(Isolation::Process),
            other => Err(format!("unknown isolation '{other}' (expected none or process)")),
        }
    }
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Isolation::None => "none",
            Isolation::Process => "process",
        })
    }
}

/// How a registry isolates its modules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IsolationSettings {
    /// For modules whose manifest entry does not say (`--module_isolation`).
    pub default: Isolation,
    /// The address-space limit each worker sets on itself before it loads the library
    /// (`--module_memory_limit_mb`); `None`: no limit.
    pub memory_limit_mb: Option<u64>,
    /// The worker executable; `None`: the running executable (which must call
    /// [`worker_main`](crate::worker::worker_main), see the
    /// [module documentation](self#embedding)).
    pub worker_exe: Option<PathBuf>,
    /// The user a worker runs as (`--module_worker_user`; by default `nobody` when the master
    /// runs as root). See [the sandbox](self#the-sandbox).
    pub worker_user: WorkerUser,
}

impl IsolationSettings {
    /// What a worker does to itself before it loads a library.
    fn confinement(&self) -> Confinement {
        Confinement { memory_limit_mb: self.memory_limit_mb, user: self.worker_user.resolve() }
    }
}

/// What a worker is started for: one module of one library, or (with `hosted` set) the
/// built-in allocator beside the sorter modules it runs.
pub(crate) struct Spec {
    pub(crate) module: String,
    /// How messages name the worker (`module 'name'`, or `the built-in allocator with sorter
    /// module 'name'`).
    pub(crate) label: String,
    /// For a worker that runs the built-in allocator: every sorter module it loads (the first
    /// request is then [`control::HOST`] instead of [`control::LOAD`]).
    pub(crate) hosted: Vec<HostedSorter>,
    pub(crate) library: PathBuf,
    pub(crate) parameters: Vec<Parameter>,
    pub(crate) confinement: Confinement,
    pub(crate) worker_exe: Option<PathBuf>,
}

/// A sorter module a worker that runs the built-in allocator loads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HostedSorter {
    pub(crate) module: String,
    pub(crate) library: PathBuf,
    pub(crate) parameters: Vec<Parameter>,
}

impl Spec {
    /// The first request of a worker that runs the built-in allocator: its sorter modules.
    fn put_hosted(&self, e: &mut Enc) {
        e.len(self.hosted.len());
        for h in &self.hosted {
            e.str(&h.library.to_string_lossy());
            e.str(&h.module);
            h.parameters.put(e);
        }
        self.confinement.put(e);
    }

    /// The worker's first request: what to load.
    fn put(&self, e: &mut Enc) {
        e.str(&self.library.to_string_lossy());
        e.str(&self.module);
        self.parameters.put(e);
        self.confinement.put(e);
    }
}

/// The registry's workers, one per isolated module, started on first use and again after one
/// died.
#[derive(Clone, Default)]
pub(crate) struct Isolator {
    pub(crate) settings: IsolationSettings,
    workers: Arc<Mutex<HashMap<String, Link>>>,
}

impl Isolator {
    /// The live worker of `module`, started if there is none.
    fn link(
        &self,
        module: &str,
        library: &std::path::Path,
        parameters: &[Parameter],
        watchdog: &Watchdog,
    ) -> Result<Link, ModuleError> {
        let mut workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(link) = workers.get(module).filter(|l| !l.is_dead()) {
            return Ok(link.clone());
        }
        let spec = Spec {
            module: module.to_owned(),
            label: format!("module '{module}'"),
            hosted: Vec::new(),
            library: library.to_owned(),
            parameters: parameters.to_vec(),
            confinement: self.settings.confinement(),
            worker_exe: self.settings.worker_exe.clone(),
        };
        let link = Link::spawn(&spec, watchdog).map_err(|e| {
            ModuleError::failed(format!("cannot start a worker for module '{module}': {e}"))
        })?;
        workers.insert(module.to_owned(), link.clone());
        Ok(link)
    }

    /// Creates an instance of allocator module `module` in its worker.
    pub(crate) fn create_allocator(
        &self,
        module: &str,
        library: &std::path::Path,
        parameters: &[Parameter],
        options: &AllocatorOptions,
        watchdog: &Watchdog,
    ) -> Result<IsolatedAllocator, ModuleError> {
        let link = self.link(module, library, parameters, watchdog)?;
        let id = create(&link, control::CREATE_ALLOCATOR, |e| options.put(e))?;
        Ok(IsolatedAllocator::new(link, id))
    }

    /// Creates an instance of sorter module `module` in its worker; `posting`: queue the
    /// per-offer calls (for the built-in allocator).
    pub(crate) fn create_sorter(
        &self,
        module: &str,
        library: &std::path::Path,
        parameters: &[Parameter],
        config: &SorterConfig,
        watchdog: &Watchdog,
        posting: bool,
    ) -> Result<IsolatedSorter, ModuleError> {
        let link = self.link(module, library, parameters, watchdog)?;
        let id = create(&link, control::CREATE_SORTER, |e| config.put(e))?;
        Ok(IsolatedSorter::new(link, id, posting))
    }
}

impl Isolator {
    /// Creates the built-in allocator with `options` (whose `role_sorter` and
    /// `framework_sorter` name its sorters) in a worker that loads the sorter modules `sorters`
    /// and calls them in-process there: one round trip per allocator call instead of one or
    /// more per sorter call. Messages name the worker `the built-in allocator with sorter
    /// module 'name'`. A live worker with the same set-up is reused (a restart after a fault
    /// that left it running).
    pub(crate) fn create_builtin(
        &self,
        sorters: &[HostedSorter],
        options: &AllocatorOptions,
        watchdog: &Watchdog,
    ) -> Result<IsolatedAllocator, ModuleError> {
        let names: Vec<&str> = sorters.iter().map(|s| s.module.as_str()).collect();
        let label = match names.as_slice() {
            [one] => format!("the built-in allocator with sorter module '{one}'"),
            many => {
                format!("the built-in allocator with sorter modules '{}'", many.join("' and '"))
            }
        };
        // Not a module name (those cannot contain a NUL): the hosting workers' own keys.
        let key = format!("\0hierarchical\0{}", names.join("\0"));
        let link = {
            let mut workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
            match workers.get(&key).filter(|l| !l.is_dead()) {
                Some(link) => link.clone(),
                None => {
                    let spec = Spec {
                        module: names.join(","),
                        label: label.clone(),
                        hosted: sorters.to_vec(),
                        library: PathBuf::new(),
                        parameters: Vec::new(),
                        confinement: self.settings.confinement(),
                        worker_exe: self.settings.worker_exe.clone(),
                    };
                    let link = Link::spawn(&spec, watchdog).map_err(|e| {
                        ModuleError::failed(format!("cannot start a worker for {label}: {e}"))
                    })?;
                    workers.insert(key, link.clone());
                    link
                }
            }
        };
        let id = create(&link, control::CREATE_BUILTIN, |e| options.put(e))?;
        Ok(IsolatedAllocator::new(link, id))
    }
}

/// A module as the worker that checked its library reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Probed {
    pub(crate) name: String,
    pub(crate) kind: ModuleKind,
    pub(crate) api_version: String,
    pub(crate) author: String,
    pub(crate) description: String,
}

impl Probed {
    fn put(&self, e: &mut Enc) {
        e.str(&self.name);
        e.u8(self.kind.0);
        e.str(&self.api_version);
        e.str(&self.author);
        e.str(&self.description);
    }

    fn get(d: &mut Dec<'_>) -> DResult<Probed> {
        Ok(Probed {
            name: d.str()?.to_owned(),
            kind: ModuleKind(d.u8()?),
            api_version: d.str()?.to_owned(),
            author: d.str()?.to_owned(),
            description: d.str()?.to_owned(),
        })
    }
}

/// One module entry of a manifest, as a probe sends it (the host's `isolation` parameter left
/// out).
pub(crate) struct ProbeEntry {
    pub(crate) name: Option<String>,
    pub(crate) parameters: Vec<Parameter>,
}

/// Why a library could not be checked in a worker.
#[derive(Debug)]
pub(crate) enum ProbeError {
    /// A loading check failed: its line, as the master writes it for a library it opens.
    Refused(String),
    /// The worker could not be started, or died or hung while it checked the library (a
    /// load-time constructor that aborts): why.
    Worker(String),
}

impl Isolator {
    /// Checks `library` and the modules `entries` name in a worker of its own, so that the
    /// master never maps it: the worker runs the registry's loading checks (abi_stable's
    /// checks, the library's `init`, the module names, API versions and `compatible()`),
    /// labelling its messages with `label`, reports the modules and exits.
    pub(crate) fn probe(
        &self,
        library: &std::path::Path,
        label: &str,
        entries: &[ProbeEntry],
        watchdog: &Watchdog,
    ) -> Result<Vec<Probed>, ProbeError> {
        let module = entries.iter().find_map(|e| e.name.clone()).unwrap_or_default();
        let spec = Spec {
            label: format!("module '{module}'"),
            module,
            hosted: Vec::new(),
            library: library.to_owned(),
            parameters: Vec::new(),
            confinement: self.settings.confinement(),
            worker_exe: self.settings.worker_exe.clone(),
        };
        let link = Link::start(&spec, watchdog)
            .map_err(|e| ProbeError::Worker(format!("cannot start a worker: {e}")))?;
        let reply = link.call(
            0,
            control::PROBE,
            "load",
            |e| {
                e.str(&library.to_string_lossy());
                e.str(label);
                spec.confinement.put(e);
                e.len(entries.len());
                for entry in entries {
                    entry.name.put(e);
                    entry.parameters.put(e);
                }
            },
            |d| match d.u8()? {
                0 => {
                    let n = d.len()?;
                    (0..n).map(|_| Probed::get(d)).collect::<DResult<Vec<_>>>().map(Ok)
                }
                1 => Ok(Err(d.str()?.to_owned())),
                _ => Err(wire::DecodeError("a bad reply tag")),
            },
        );
        match reply {
            Ok(Ok(modules)) => Ok(modules),
            Ok(Err(line)) => Err(ProbeError::Refused(line)),
            Err(e) => Err(ProbeError::Worker(e.message.to_string())),
        }
    }
}

/// Worker: answers a probe request (see [`Isolator::probe`]) with `check`'s verdict on the
/// library, label, confinement and entries it carries.
pub(crate) fn answer_probe(
    d: &mut Dec<'_>,
    e: &mut Enc,
    check: impl FnOnce(&str, &str, Confinement, Vec<ProbeEntry>) -> Result<Vec<Probed>, String>,
) -> DResult<()> {
    let library = d.str()?.to_owned();
    let label = d.str()?.to_owned();
    let confinement = Confinement::get(d)?;
    let n = d.len()?;
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let name = Option::<String>::get(d)?;
        let parameters = Vec::<Parameter>::get(d)?;
        entries.push(ProbeEntry { name, parameters });
    }
    match check(&library, &label, confinement, entries) {
        Ok(modules) => {
            e.u8(0);
            e.len(modules.len());
            for m in &modules {
                m.put(e);
            }
        }
        Err(line) => {
            e.u8(1);
            e.str(&line);
        }
    }
    Ok(())
}

fn create(link: &Link, what: u8, args: impl FnOnce(&mut Enc)) -> Result<u32, ModuleError> {
    let id = link.new_instance();
    link.call(
        0,
        what,
        "create",
        |e| {
            e.u32(id);
            args(e);
        },
        reply_result,
    )??;
    Ok(id)
}
