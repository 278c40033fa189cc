//! What keeps a failing case from passing unnoticed or unexplained: an
//! allocator with a limit (an allocation beyond it fails, which aborts unless
//! the caller handles it), a report of the cases in flight when the process
//! dies of a signal, and a watchdog that aborts a case that hangs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// The system allocator with a limit on the bytes live at once.
pub struct LimitedAlloc;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The largest request refused (0: none).
static REFUSED: AtomicUsize = AtomicUsize::new(0);

#[global_allocator]
static ALLOC: LimitedAlloc = LimitedAlloc;

/// Heap bytes the process may hold at once (default: no limit).
pub fn set_memory_limit(bytes: usize) {
    LIMIT.store(bytes, Relaxed);
}

pub fn live_bytes() -> usize {
    LIVE.load(Relaxed)
}

fn reserve(n: usize) -> bool {
    let before = LIVE.fetch_add(n, Relaxed);
    if before.saturating_add(n) > LIMIT.load(Relaxed) {
        LIVE.fetch_sub(n, Relaxed);
        REFUSED.fetch_max(n, Relaxed);
        return false;
    }
    true
}

unsafe impl GlobalAlloc for LimitedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        let p = System.alloc(layout);
        if p.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        let p = System.alloc_zeroed(layout);
        if p.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !reserve(new_size - old) {
            return std::ptr::null_mut();
        }
        let p = System.realloc(ptr, layout, new_size);
        if p.is_null() {
            if new_size > old {
                LIVE.fetch_sub(new_size - old, Relaxed);
            }
        } else if new_size < old {
            LIVE.fetch_sub(old - new_size, Relaxed);
        }
        p
    }
}

/// A case in flight, for the crash report and the watchdog.
struct Slot {
    active: AtomicBool,
    target: AtomicUsize,
    case: AtomicU64,
    started_ms: AtomicU64,
}

const SLOTS: usize = 16;
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    active: AtomicBool::new(false),
    target: AtomicUsize::new(0),
    case: AtomicU64::new(0),
    started_ms: AtomicU64::new(0),
};
static IN_FLIGHT: [Slot; SLOTS] = [EMPTY; SLOTS];
static SEED: AtomicU64 = AtomicU64::new(0);
/// Where the in-process driver writes each case's input before running it
/// (leaked bytes of a path; null: nowhere).
static CURRENT_DIR: std::sync::atomic::AtomicPtr<Vec<u8>> = std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// The file each case's input is written to before it runs, so that a case
/// that kills the process can be rerun from it.
pub fn current_input_path(dir: &std::path::Path, target: &crate::targets::Target, seed: u64) -> std::path::PathBuf {
    dir.join(format!("{}-{seed}.current.{}", target.name, target.ext))
}

/// Names the directory of the current inputs in the crash report.
pub fn set_current_dir(dir: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let bytes = Box::leak(Box::new(dir.as_os_str().as_bytes().to_vec()));
    CURRENT_DIR.store(bytes, Relaxed);
}
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

fn epoch() -> Instant {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *START.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64
}

/// The campaign's seed, for the crash report.
pub fn set_seed(seed: u64) {
    SEED.store(seed, Relaxed);
}

/// A slot for one thread running cases.
pub fn claim_slot() -> usize {
    NEXT_SLOT.fetch_add(1, Relaxed) % SLOTS
}

/// Marks `case` of `target` (an index of the target table) in flight.
pub fn begin(slot: usize, target: usize, case: u64) {
    let s = &IN_FLIGHT[slot];
    s.target.store(target, Relaxed);
    s.case.store(case, Relaxed);
    s.started_ms.store(now_ms(), Relaxed);
    s.active.store(true, Relaxed);
}

pub fn end(slot: usize) {
    IN_FLIGHT[slot].active.store(false, Relaxed);
}

/// Writes without allocating (from a signal handler).
fn raw_write(parts: &[&[u8]]) {
    for p in parts {
        // SAFETY: write(2) on stderr with a valid buffer.
        unsafe { libc::write(2, p.as_ptr().cast(), p.len()) };
    }
}

fn decimal(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &buf[i..];
        }
    }
}

/// Lists the cases in flight on stderr, without allocating.
pub fn report_in_flight(why: &[u8]) {
    let (mut a, mut b, mut c) = ([0u8; 20], [0u8; 20], [0u8; 20]);
    raw_write(&[
        b"\nfno-fuzz: ",
        why,
        b"; seed ",
        decimal(SEED.load(Relaxed), &mut a),
        b"\n",
    ]);
    let refused = REFUSED.load(Relaxed) as u64;
    if refused > 0 {
        raw_write(&[
            b"fno-fuzz: largest allocation refused by the memory limit: ",
            decimal(refused, &mut c),
            b" bytes\n",
        ]);
    }
    for s in &IN_FLIGHT {
        if s.active.load(Relaxed) {
            let name = crate::targets::name_of(s.target.load(Relaxed));
            let ms = now_ms().saturating_sub(s.started_ms.load(Relaxed));
            raw_write(&[
                b"fno-fuzz: in flight: target ",
                name.as_bytes(),
                b", case ",
                decimal(s.case.load(Relaxed), &mut a),
                b" (running for ",
                decimal(ms, &mut b),
                b" ms); rerun with FNO_FUZZ_SEED and FNO_FUZZ_TARGET to reproduce\n",
            ]);
            let dir = CURRENT_DIR.load(Relaxed);
            if !dir.is_null() {
                let ext = crate::targets::ext_of(s.target.load(Relaxed));
                // SAFETY: leaked by `set_current_dir`, never freed.
                let dir = unsafe { &*dir };
                let seed = decimal(SEED.load(Relaxed), &mut c);
                raw_write(&[
                    b"fno-fuzz: its input: ",
                    dir,
                    b"/",
                    name.as_bytes(),
                    b"-",
                    seed,
                    b".current.",
                    ext.as_bytes(),
                    b"\n",
                ]);
            }
        }
    }
}

static OLD_ACTIONS: [AtomicUsize; 32] = [const { AtomicUsize::new(0) }; 32];

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let why: &[u8] = match sig {
        libc::SIGSEGV => b"SIGSEGV",
        libc::SIGBUS => b"SIGBUS",
        libc::SIGABRT => b"SIGABRT (abort: a failed allocation, a double panic or a C library's assertion)",
        libc::SIGILL => b"SIGILL",
        libc::SIGFPE => b"SIGFPE",
        _ => b"a fatal signal",
    };
    report_in_flight(why);
    // Hand the signal on to whoever handled it before (Rust's stack overflow
    // report), else to the default action.
    let old = OLD_ACTIONS[sig as usize].load(Relaxed) as *const libc::sigaction;
    // SAFETY: `old` was saved by `install_crash_report` and lives forever.
    unsafe {
        if !old.is_null() {
            let old = &*old;
            if old.sa_flags & libc::SA_SIGINFO != 0 && old.sa_sigaction > libc::SIG_IGN {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(old.sa_sigaction);
                f(sig, info, ctx);
                return;
            }
        }
        libc::signal(sig, libc::SIG_DFL);
        if sig == libc::SIGABRT {
            libc::raise(sig);
        }
    }
}

/// On a fatal signal, report the cases in flight (then die as before).
pub fn install_crash_report() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGABRT, libc::SIGILL, libc::SIGFPE] {
            // SAFETY: plain sigaction calls with zeroed, then filled, structs.
            unsafe {
                let old: &'static mut libc::sigaction = Box::leak(Box::new(std::mem::zeroed()));
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_signal as *const () as usize;
                new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
                libc::sigemptyset(&mut new.sa_mask);
                if libc::sigaction(sig, &new, old) == 0 {
                    OLD_ACTIONS[sig as usize].store(old as *const libc::sigaction as usize, Relaxed);
                }
            }
        }
    });
}

/// Aborts the process, naming the case, when one runs longer than `timeout`.
pub fn start_watchdog(timeout: Duration) {
    epoch();
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(250));
        let now = now_ms();
        let hung = IN_FLIGHT.iter().any(|s| {
            s.active.load(Relaxed) && now.saturating_sub(s.started_ms.load(Relaxed)) > timeout.as_millis() as u64
        });
        if hung {
            report_in_flight(b"a case ran past the timeout (a hang)");
            // SAFETY: plain exit; the report is written.
            unsafe { libc::_exit(124) };
        }
    });
}
