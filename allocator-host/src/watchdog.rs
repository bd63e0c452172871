//! The call budget and watchdog: every call into a module (allocator or sorter, factories and
//! drops included) in every mode runs under them.
//!
//! The registry owns one [`Watchdog`]; every instance it creates from a module is wrapped in
//! [`WatchedAllocator`] or [`WatchedSorter`], and factories run through [`Watchdog::call`].
//! A call slower than the budget is counted and logged; a call still running after the
//! timeout cannot be interrupted (it runs on the caller's thread inside the module), so the
//! watchdog thread stops the master with the reason (exit code 2).

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use allocator_api::{
    AgentAllocation, AgentId, AgentInfo, Allocation, Allocator, ClientId, ExplainEntry,
    ExplainSubject, FrameworkId, FrameworkInfo, FrameworkOptions, InverseOfferStatus,
    InverseOfferStatusEntry, OfferBatch, Operation, Quantities, Quota, RString, RVec, Request,
    Resources, Result, RoleQuota, RoleWeight, Sorter, Unavailability,
};

/// The exit code when a module call outlives the timeout (as for any module fault that stops).
const EXIT_HUNG: i32 = 2;

/// The exit code when a module ends the process from inside a call (it called `exit`, or
/// abi_stable ended it for a panic across the boundary): never 0 or 1, which mean success and a
/// failed expectation.
pub const EXIT_MODULE_ENDED_PROCESS: i32 = 3;

/// Every watchdog of the process, for the exit hook.
static WATCHDOGS: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Set when the host itself ends the process during a module call (a hung call).
static HOST_EXITING: AtomicBool = AtomicBool::new(false);

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
    fn _exit(status: std::ffi::c_int) -> !;
}

/// Makes a module that ends the process from inside a call (`exit(0)`, `exit(1)`, or
/// abi_stable's `exit(1)` for a panic across the boundary) visible: at exit, if a module call is
/// in progress, an error record (through `log`) names the module and the call, and the process
/// exits with
/// [`EXIT_MODULE_ENDED_PROCESS`] instead of the module's code. For the master's binary; an
/// embedding master may install it too. Installing twice is harmless.
pub fn report_modules_that_end_the_process() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: registers a plain function with the C runtime.
        if unsafe { atexit(on_exit) } != 0 {
            log::warn!("cannot install the exit hook: a module ending the process goes unnamed");
        }
    });
}

/// The module call in progress in any watchdog, if one is (`(module, call)`).
fn call_in_progress() -> Option<(String, &'static str)> {
    let watchdogs = WATCHDOGS.try_lock().ok()?;
    for shared in watchdogs.iter().filter_map(Weak::upgrade) {
        let Ok(slots) = shared.slots.try_lock() else { continue };
        for slot in slots.iter().filter_map(Weak::upgrade) {
            if slot.started_us.load(Ordering::Acquire) != 0 {
                let what = slot.what.load(Ordering::Relaxed);
                // SAFETY: `what` is null or points to a `&'static &'static str`.
                let what = if what.is_null() { "a call" } else { unsafe { *what } };
                return Some((slot.module.clone(), what));
            }
        }
    }
    None
}

extern "C" fn on_exit() {
    if HOST_EXITING.load(Ordering::SeqCst) {
        return;
    }
    if let Some((module, what)) = call_in_progress() {
        log::error!(
            "{module} ended the process from inside {what} (it called exit, or panicked across \
             the module boundary); exit code {EXIT_MODULE_ENDED_PROCESS}"
        );
        log::logger().flush();
        // SAFETY: ends the process at once, without running the remaining exit handlers.
        unsafe { _exit(EXIT_MODULE_ENDED_PROCESS) }
    }
}

/// One module instance's call in progress, read by the watchdog thread.
struct Slot {
    /// Start of the current call in microseconds since the watchdog's epoch; 0 when idle.
    started_us: AtomicU64,
    /// The call's name (`&'static` so that the watchdog can read it at any time).
    what: AtomicPtr<&'static str>,
    /// `allocator 'm'` or `sorter 'm'`.
    module: String,
}

struct Shared {
    epoch: Instant,
    /// `f64` bits; 0 means off.
    budget_ms: AtomicU64,
    /// `f64` bits; 0 means off.
    timeout_ms: AtomicU64,
    over_budget: AtomicU64,
    slots: Mutex<Vec<Weak<Slot>>>,
    thread: AtomicBool,
    /// Microseconds since `epoch`, updated by the watchdog thread every period (0 while it is
    /// not running): the clock of the hot sorter calls, which read it instead of the system
    /// clock.
    coarse_us: AtomicU64,
    /// The watchdog thread's period in microseconds (the coarse clock's resolution).
    period_us: AtomicU64,
}

/// The budget and watchdog shared by every module instance of one registry. Cloning shares it.
#[derive(Clone)]
pub struct Watchdog {
    shared: Arc<Shared>,
}

impl Default for Watchdog {
    fn default() -> Watchdog {
        let watchdog = Watchdog {
            shared: Arc::new(Shared {
                epoch: Instant::now(),
                budget_ms: AtomicU64::new(0),
                timeout_ms: AtomicU64::new(0),
                over_budget: AtomicU64::new(0),
                slots: Mutex::new(Vec::new()),
                thread: AtomicBool::new(false),
                coarse_us: AtomicU64::new(0),
                period_us: AtomicU64::new(0),
            }),
        };
        if let Ok(mut all) = WATCHDOGS.lock() {
            all.retain(|w| w.strong_count() > 0);
            all.push(Arc::downgrade(&watchdog.shared));
        }
        watchdog
    }
}

fn ms(bits: &AtomicU64) -> Option<f64> {
    let v = f64::from_bits(bits.load(Ordering::Relaxed));
    (v > 0.0 && v.is_finite()).then_some(v)
}

impl Watchdog {
    /// Sets the budget (slower calls are counted and logged) and the timeout (a call running
    /// longer stops the master); `None` turns either off.
    pub fn set_limits(&self, budget_ms: Option<f64>, timeout_ms: Option<f64>) {
        let bits = |v: Option<f64>| v.filter(|v| *v > 0.0).unwrap_or(0.0).to_bits();
        self.shared.budget_ms.store(bits(budget_ms), Ordering::Relaxed);
        self.shared.timeout_ms.store(bits(timeout_ms), Ordering::Relaxed);
        if timeout_ms.is_some() && !self.shared.slots.lock().map(|s| s.is_empty()).unwrap_or(true) {
            self.start_thread();
        }
    }

    /// The budget and the timeout in milliseconds, as set (`None`: off).
    pub fn limits_ms(&self) -> (Option<f64>, Option<f64>) {
        (ms(&self.shared.budget_ms), ms(&self.shared.timeout_ms))
    }

    /// Counts and logs a call that `module` (an isolated module, timed by its proxy) took
    /// `took_ms` for, if that is over the budget.
    pub(crate) fn note_call(&self, module: &str, what: &str, took_ms: f64) {
        if let Some(budget) = ms(&self.shared.budget_ms)
            && took_ms > budget
        {
            self.shared.over_budget.fetch_add(1, Ordering::Relaxed);
            log::warn!(
                "module call {what} ({module}) took {took_ms:.1} ms, over the {budget} ms budget"
            );
        }
    }

    /// The number of module calls that took longer than the budget so far.
    pub fn over_budget(&self) -> u64 {
        self.shared.over_budget.load(Ordering::Relaxed)
    }

    fn slot(&self, module: String) -> Arc<Slot> {
        let slot = Arc::new(Slot {
            started_us: AtomicU64::new(0),
            what: AtomicPtr::new(std::ptr::null_mut()),
            module,
        });
        if let Ok(mut slots) = self.shared.slots.lock() {
            slots.retain(|s| s.strong_count() > 0);
            slots.push(Arc::downgrade(&slot));
        }
        if ms(&self.shared.timeout_ms).is_some() {
            self.start_thread();
        }
        slot
    }

    /// Runs one call into `module` (`allocator 'm'`, `sorter 'm'`) under the budget and the
    /// watchdog: used for factories; instances use the wrappers.
    pub fn call<R>(&self, module: &str, what: &'static &'static str, f: impl FnOnce() -> R) -> R {
        let slot = self.slot(module.to_owned());
        self.run(&slot, what, f)
    }

    fn run<R>(&self, slot: &Slot, what: &'static &'static str, f: impl FnOnce() -> R) -> R {
        let start = Instant::now();
        slot.what.store(what as *const &'static str as *mut &'static str, Ordering::Relaxed);
        let since_epoch = start.saturating_duration_since(self.shared.epoch).as_micros() as u64;
        slot.started_us.store(since_epoch.max(1), Ordering::Release);
        let r = f();
        slot.started_us.store(0, Ordering::Release);
        if let Some(budget) = ms(&self.shared.budget_ms) {
            let took = start.elapsed().as_secs_f64() * 1e3;
            if took > budget {
                self.shared.over_budget.fetch_add(1, Ordering::Relaxed);
                log::warn!(
                    "module call {what} ({}) took {took:.1} ms, over the {budget} ms budget",
                    slot.module
                );
            }
        }
        r
    }

    /// Like [`run`](Self::run) for the hot sorter calls: times them with the watchdog's coarse
    /// clock (no system call), so the budget is checked at the watchdog's resolution and only
    /// while the watchdog runs (a timeout is set).
    fn run_coarse<R>(&self, slot: &Slot, what: &'static &'static str, f: impl FnOnce() -> R) -> R {
        let start = self.shared.coarse_us.load(Ordering::Relaxed);
        if start == 0 {
            return self.run(slot, what, f);
        }
        slot.what.store(what as *const &'static str as *mut &'static str, Ordering::Relaxed);
        slot.started_us.store(start, Ordering::Release);
        let r = f();
        slot.started_us.store(0, Ordering::Release);
        if let Some(budget) = ms(&self.shared.budget_ms) {
            let took =
                self.shared.coarse_us.load(Ordering::Relaxed).saturating_sub(start) as f64 / 1e3;
            if took > budget {
                self.shared.over_budget.fetch_add(1, Ordering::Relaxed);
                log::warn!(
                    "module call {what} ({}) took about {took:.0} ms, over the {budget} ms budget",
                    slot.module
                );
            }
        }
        r
    }

    fn start_thread(&self) {
        if self.shared.thread.swap(true, Ordering::SeqCst) {
            return;
        }
        let weak = Arc::downgrade(&self.shared);
        let tick = |shared: &Shared| {
            let now = (shared.epoch.elapsed().as_micros() as u64).max(1);
            shared.coarse_us.store(now, Ordering::Relaxed);
        };
        tick(&self.shared);
        let spawned = std::thread::Builder::new().name("module-watchdog".into()).spawn(move || {
            loop {
                let Some(shared) = weak.upgrade() else { return };
                tick(&shared);
                let timeout = ms(&shared.timeout_ms);
                let period = timeout.map_or(250.0, |t| (t / 4.0).clamp(1.0, 250.0));
                shared.period_us.store((period * 1e3) as u64, Ordering::Relaxed);
                if let Some(timeout) = timeout {
                    check(&shared, timeout);
                }
                drop(shared);
                std::thread::sleep(Duration::from_secs_f64(period / 1e3));
            }
        });
        if let Err(e) = spawned {
            log::error!("cannot start the module watchdog: {e}; hung module calls go unnoticed");
        }
    }
}

/// Stops the process when a call has run longer than `timeout` ms.
fn check(shared: &Shared, timeout: f64) {
    let now = shared.epoch.elapsed().as_micros() as u64;
    let Ok(slots) = shared.slots.lock() else { return };
    for slot in slots.iter().filter_map(Weak::upgrade) {
        let started = slot.started_us.load(Ordering::Acquire);
        if started == 0 {
            continue;
        }
        let running_ms = now.saturating_sub(started) as f64 / 1e3;
        // A start read from the coarse clock may be up to one period early.
        let slack_ms = shared.period_us.load(Ordering::Relaxed) as f64 / 1e3;
        if running_ms - slack_ms > timeout {
            let what = slot.what.load(Ordering::Relaxed);
            // SAFETY: only `&'static &'static str` pointers are ever stored.
            let what = if what.is_null() { "?" } else { unsafe { *what } };
            log::error!(
                "a module call has not returned for {running_ms:.0} ms ({what}, {}), over the module call timeout of {timeout} ms; ending the process (exit code {EXIT_HUNG})",
                slot.module
            );
            log::logger().flush();
            HOST_EXITING.store(true, Ordering::SeqCst);
            std::process::exit(EXIT_HUNG);
        }
    }
}

/// A module allocator whose every call (and drop) runs under the [`Watchdog`].
pub struct WatchedAllocator {
    inner: std::mem::ManuallyDrop<Box<dyn Allocator>>,
    watchdog: Watchdog,
    slot: Arc<Slot>,
}

impl WatchedAllocator {
    /// Wraps `inner`, a module's allocator called `name`.
    pub fn new(inner: Box<dyn Allocator>, name: &str, watchdog: &Watchdog) -> WatchedAllocator {
        let slot = watchdog.slot(format!("allocator '{name}'"));
        WatchedAllocator {
            inner: std::mem::ManuallyDrop::new(inner),
            watchdog: watchdog.clone(),
            slot,
        }
    }
}

impl Drop for WatchedAllocator {
    fn drop(&mut self) {
        // SAFETY: taken once, here; `self` is not used again.
        let inner = unsafe { std::mem::ManuallyDrop::take(&mut self.inner) };
        self.watchdog.run(&self.slot, &"drop", move || drop(inner));
    }
}

/// A module sorter whose every call (and drop) runs under the [`Watchdog`].
pub struct WatchedSorter {
    inner: std::mem::ManuallyDrop<Box<dyn Sorter>>,
    watchdog: Watchdog,
    slot: Arc<Slot>,
}

impl WatchedSorter {
    /// Wraps `inner`, a module's sorter called `name`.
    pub fn new(inner: Box<dyn Sorter>, name: &str, watchdog: &Watchdog) -> WatchedSorter {
        let slot = watchdog.slot(format!("sorter '{name}'"));
        WatchedSorter {
            inner: std::mem::ManuallyDrop::new(inner),
            watchdog: watchdog.clone(),
            slot,
        }
    }
}

impl Drop for WatchedSorter {
    fn drop(&mut self) {
        // SAFETY: taken once, here; `self` is not used again.
        let inner = unsafe { std::mem::ManuallyDrop::take(&mut self.inner) };
        self.watchdog.run(&self.slot, &"drop", move || drop(inner));
    }
}

/// Forwards each listed method ([`crate::methods`]) to `self.inner` under the watchdog's
/// `$run`.
macro_rules! watched {
    ($run:ident;) => {};
    ($run:ident; $id:literal out fn $name:ident(& $(mut $($m:lifetime)?)? self $(, $arg:ident: $ty:ty)* ; $out:ident: $oty:ty) -> $ret:ty; $($rest:tt)*) => {
        fn $name(& $(mut $($m)?)? self $(, $arg: $ty)*, $out: &mut $oty) -> $ret {
            let inner = & $(mut $($m)?)? self.inner;
            self.watchdog.$run(&self.slot, &stringify!($name), || inner.$name($($arg,)* $out))
        }
        watched! { $run; $($rest)* }
    };
    ($run:ident; $id:literal $mode:ident fn $name:ident(& $(mut $($m:lifetime)?)? self $(, $arg:ident: $ty:ty)*) -> $ret:ty; $($rest:tt)*) => {
        fn $name(& $(mut $($m)?)? self $(, $arg: $ty)*) -> $ret {
            let inner = & $(mut $($m)?)? self.inner;
            self.watchdog.$run(&self.slot, &stringify!($name), || inner.$name($($arg),*))
        }
        watched! { $run; $($rest)* }
    };
}

impl Sorter for WatchedSorter {
    crate::methods::sorter_methods!(watched! { run_coarse; });
}

impl Allocator for WatchedAllocator {
    crate::methods::allocator_methods!(watched! { run; });
}
