// runtime.cpp: rocmlab's CPU simulator of HIP kernels with MI300X's wavefront of 64 ("[cpu: wave64 simulator]").
//
// A launch hands its blocks to a few CPU threads (workers). A worker runs one block at a time: each thread of
// the block is a fiber with its own stack, and the fibers run one after another, each until it reaches a
// meeting point (a cross-lane operation or a barrier) or returns. When no fiber can go on, the scheduler
// settles what they wait for:
//   - a wavefront (64 consecutive threads) whose waiting lanes all stand at the same cross-lane operation
//     runs it with those lanes as the exec mask: a lane that returned or waits at a barrier is inactive, as on
//     CDNA (reading an inactive lane gives 0, as ds_bpermute does; __ballot shows only active lanes);
//   - lanes of one wavefront at different cross-lane operations: the order a GPU would run them in cannot be
//     told from here, so the program stops and names the lines (it never guesses);
//   - every thread at the same barrier: released. Some at a barrier while others returned, or at different
//     barriers: a deadlock, reported with the lines.
// Fibers switch with a few instructions of assembly on x86-64 (swapcontext makes a system call per switch:
// see benchmarks/sim_fidelity.py and the README); other CPUs use ucontext.
#include <hip/hip_runtime.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdarg>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__) || defined(HIPSIM_UCONTEXT)
#define HIPSIM_USE_UCONTEXT 1
#include <ucontext.h>
#endif

namespace hipsim {

static const int kWave = 64;
static const int kMaxThreads = 1024;
static const size_t kSharedBytes = 64 * 1024;   // LDS per workgroup on gfx942
static const int kExitCode = 86;
static const char* kLabel = "[cpu: wave64 simulator]";

thread_local ThreadCoords* t_thread = nullptr;
thread_local BlockCoords t_block;

int warp_size() { return kWave; }
}  // namespace hipsim
extern const int warpSize = 64;
namespace hipsim {

// --- settings (environment) -----------------------------------------------------------------------------
static long env_long(const char* name, long dflt) {
    const char* v = std::getenv(name);
    if (!v || !*v) return dflt;
    char* end = nullptr;
    long x = std::strtol(v, &end, 10);
    return (end && *end == 0 && x > 0) ? x : dflt;
}
static double env_double(const char* name, double dflt) {
    const char* v = std::getenv(name);
    if (!v || !*v) return dflt;
    char* end = nullptr;
    double x = std::strtod(v, &end);
    return (end && *end == 0 && x > 0) ? x : dflt;
}

static void vreport(const char* fmt, va_list ap) {
    std::fflush(stdout);
    char buf[2048];
    int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
    if (n < 0) buf[0] = 0;
    std::fprintf(stderr, "%s error: %s\n", kLabel, buf);
    std::fflush(stderr);
}
static void report(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
}
// The program stops here (a deadlock, a divergent wavefront operation, a bad mask): exit status 86.
[[noreturn]] void fatal(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    _exit(kExitCode);
}

// --- fibers ---------------------------------------------------------------------------------------------
enum State { READY = 0, WAVE = 1, BARRIER = 2, DONE = 3 };

struct Fiber {
    ThreadCoords coords;
    int state = DONE;
#ifdef HIPSIM_USE_UCONTEXT
    ucontext_t ctx;
#else
    void* sp = nullptr;
#endif
    // what it waits for
    uint64_t value = 0, mask = 0;
    int src = 0, pred = 0, has_mask = 0, line = 0;
    const char* what = "";
    // what it gets back
    Exchange reply{0, 0, 0};
    int count = 0;
};

struct Worker {
    int id = 0;
    std::vector<Fiber> fibers;
    char* stacks = nullptr;
    size_t stack_bytes = 0;
#ifdef HIPSIM_USE_UCONTEXT
    ucontext_t sched;
#else
    void* sched_sp = nullptr;
#endif
    std::atomic<Fiber*> cur{nullptr};
    const LaunchSpec* spec = nullptr;
    std::atomic<int> block_linear{-1};
    int nthreads = 0;
};
static thread_local Worker* t_worker = nullptr;
static std::mutex& g_workers_mu = *new std::mutex;
static std::vector<Worker*>& g_workers = *new std::vector<Worker*>;   // for the watchdog and the fault handler
static const size_t kPage = 4096;

#ifndef HIPSIM_USE_UCONTEXT
extern "C" void hipsim_switch(void** save_sp, void* to_sp);
asm(R"(
.text
.globl hipsim_switch
.type hipsim_switch,@function
hipsim_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size hipsim_switch,.-hipsim_switch
.section .note.GNU-stack,"",@progbits
.text
)");
#endif

extern "C" void hipsim_fiber_main();

static void to_scheduler(Fiber* f) {
    Worker* w = t_worker;
#ifdef HIPSIM_USE_UCONTEXT
    swapcontext(&f->ctx, &w->sched);
#else
    hipsim_switch(&f->sp, w->sched_sp);
#endif
}

extern "C" void hipsim_fiber_main() {
    Worker* w = t_worker;
    Fiber* f = w->cur.load(std::memory_order_relaxed);
    w->spec->call(w->spec->state);
    f->state = DONE;
    to_scheduler(f);
    fatal("internal: a finished fiber was resumed");
}

static void start_fiber(Worker* w, Fiber* f, int i) {
    // the guard page is at the bottom; the tops are staggered by a few cache lines so that the fibers' hot
    // stack frames do not all fall into the same cache sets (stacks are a multiple of 4 KiB apart)
    char* top = w->stacks + static_cast<size_t>(i + 1) * w->stack_bytes - static_cast<size_t>(i % 61) * 64;
#ifdef HIPSIM_USE_UCONTEXT
    getcontext(&f->ctx);
    char* bottom = w->stacks + static_cast<size_t>(i) * w->stack_bytes + kPage;
    f->ctx.uc_stack.ss_sp = bottom;
    f->ctx.uc_stack.ss_size = static_cast<size_t>(top - bottom);
    f->ctx.uc_link = nullptr;
    makecontext(&f->ctx, hipsim_fiber_main, 0);
#else
    uint64_t* s = reinterpret_cast<uint64_t*>(top);
    s[-1] = 0;
    s[-2] = reinterpret_cast<uint64_t>(&hipsim_fiber_main);
    for (int r = 3; r <= 8; ++r) s[-r] = 0;        // rbp rbx r12 r13 r14 r15
    f->sp = &s[-8];   // the fibers of a CPU thread share its floating-point control state: not switched
#endif
    (void)w;
}

static void resume(Worker* w, Fiber* f) {
    w->cur.store(f, std::memory_order_relaxed);
    t_thread = &f->coords;
#ifdef HIPSIM_USE_UCONTEXT
    swapcontext(&w->sched, &f->ctx);
#else
    hipsim_switch(&w->sched_sp, f->sp);
#endif
    w->cur.store(nullptr, std::memory_order_relaxed);
    t_thread = nullptr;
}

static Worker* this_worker() {
    if (t_worker) return t_worker;
    Worker* w = new Worker();
    w->fibers.resize(kMaxThreads);
    w->stack_bytes = static_cast<size_t>(env_long("HIPSIM_STACK_KB", 64)) * 1024 + kPage;
    size_t total = w->stack_bytes * kMaxThreads;
    void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) fatal("cannot reserve %zu MiB for fiber stacks (memory limit?)", total >> 20);
    w->stacks = static_cast<char*>(p);
    for (int i = 0; i < kMaxThreads; ++i) mprotect(w->stacks + static_cast<size_t>(i) * w->stack_bytes, kPage, PROT_NONE);
    // the fault handler runs on its own stack (a fiber's may be the one that overflowed)
    stack_t alt;
    alt.ss_sp = std::malloc(64 * 1024);
    alt.ss_size = 64 * 1024;
    alt.ss_flags = 0;
    sigaltstack(&alt, nullptr);
    {
        std::lock_guard<std::mutex> g(g_workers_mu);
        w->id = static_cast<int>(g_workers.size());
        g_workers.push_back(w);
    }
    t_worker = w;
    return w;
}

// --- where a message says it happened ----------------------------------------------------------------------
static void block_name(const Worker* w, char* out, size_t n) {
    const LaunchSpec* s = w->spec;
    int b = w->block_linear.load();
    if (!s || b < 0) { std::snprintf(out, n, "?"); return; }
    unsigned gx = s->grid.x, gy = s->grid.y;
    std::snprintf(out, n, "(%u,%u,%u)", b % gx, (b / gx) % gy, b / (gx * gy));
}
static void lanes_text(uint64_t m, char* out, size_t n) {
    // "0-31" or "0-3,8,10-63"
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < 64 && k + 12 < n;) {
        if (!((m >> i) & 1)) { ++i; continue; }
        int j = i;
        while (j + 1 < 64 && ((m >> (j + 1)) & 1)) ++j;
        k += std::snprintf(out + k, n - k, "%s%d", k ? "," : "", i);
        if (j > i) k += std::snprintf(out + k, n - k, "-%d", j);
        i = j + 1;
    }
}
static const char* kernel_where(const Worker* w, char* out, size_t n) {
    char b[64];
    block_name(w, b, sizeof b);
    std::snprintf(out, n, "block %s of kernel %s (launched at line %d)", b, w->spec ? w->spec->kernel : "?",
                  w->spec ? w->spec->line : 0);
    return out;
}

// --- meeting points ------------------------------------------------------------------------------------------
__attribute__((noinline)) Exchange wave_exchange(uint64_t value, int src_lane, int pred, uint64_t mask,
                                                 int has_mask, const char* what, int line) {
    Worker* w = t_worker;
    Fiber* f = w ? w->cur.load(std::memory_order_relaxed) : nullptr;
    if (!f) fatal("%s (line %d) was called outside a kernel: cross-lane operations are device code", what, line);
    f->value = value;
    f->src = src_lane;
    f->pred = pred;
    f->mask = mask;
    f->has_mask = has_mask;
    f->what = what;
    f->line = line;
    f->state = WAVE;
    to_scheduler(f);
    return f->reply;
}

static int barrier(int pred, const char* what, int line) {
    Worker* w = t_worker;
    Fiber* f = w ? w->cur.load(std::memory_order_relaxed) : nullptr;
    if (!f) fatal("%s (line %d) was called outside a kernel", what, line);
    f->pred = pred;
    f->what = what;
    f->line = line;
    f->state = BARRIER;
    to_scheduler(f);
    return f->count;
}
void block_barrier(const char* what, int line) { barrier(0, what, line); }
int block_barrier_count(int pred, const char* what, int line) { return barrier(pred != 0, what, line); }

void* dynamic_shared_base() {
    static thread_local char* base = nullptr;
    if (!base) {
        base = static_cast<char*>(std::aligned_alloc(256, kSharedBytes));
        std::memset(base, 0, kSharedBytes);
    }
    return base;
}

void not_simulated(const char* what, int line) {
    fatal("line %d: %s is not simulated on the CPU: run this program on an AMD GPU", line, what);
}

// Where a lane waits: the operation and its source line. (Not the code address: the compiler may merge the
// calls of two branches into one call instruction.)
static bool same_site(const Fiber& a, const Fiber& b) {
    return a.line == b.line && (a.what == b.what || std::strcmp(a.what, b.what) == 0);
}

// Settle the cross-lane operations of every wavefront whose waiting lanes stand at one place. True if any ran.
static bool settle_waves(Worker* w, int n) {
    bool any = false;
    for (int base = 0; base < n; base += kWave) {
        const int end = base + kWave < n ? base + kWave : n;
        uint64_t exec = 0, ballot = 0;
        int first = -1;
        for (int i = base; i < end; ++i) {
            Fiber& f = w->fibers[i];
            if (f.state != WAVE) continue;
            if (first < 0) first = i;
            else if (!same_site(f, w->fibers[first])) {
                Fiber& g = w->fibers[first];
                uint64_t at_g = 0, at_f = 0;
                for (int k = base; k < end; ++k) {
                    if (w->fibers[k].state != WAVE) continue;
                    if (same_site(w->fibers[k], g)) at_g |= 1ull << (k - base);
                    else if (same_site(w->fibers[k], f)) at_f |= 1ull << (k - base);
                }
                char lg[256], lf[256], where[256];
                lanes_text(at_g, lg, sizeof lg);
                lanes_text(at_f, lf, sizeof lf);
                fatal("divergent wavefront operations in wavefront %d of %s: lanes %s wait at %s (line %d) while "
                      "lanes %s wait at %s (line %d). The simulator cannot tell in which order a GPU would run "
                      "them, so it stops rather than guess: let every active lane of the wavefront reach the same "
                      "cross-lane operation (take it out of the divergent branch)",
                      base / kWave, kernel_where(w, where, sizeof where), lg, g.what, g.line, lf, f.what, f.line);
            }
            exec |= 1ull << (i - base);
            if (f.pred) ballot |= 1ull << (i - base);
        }
        if (first < 0) continue;
        for (int i = base; i < end; ++i) {
            Fiber& f = w->fibers[i];
            if (f.state != WAVE) continue;
            if (f.has_mask) {
                uint64_t same = 0;
                for (int k = base; k < end; ++k)
                    if (w->fibers[k].state == WAVE && w->fibers[k].mask == f.mask) same |= 1ull << (k - base);
                if (f.mask != same) {
                    char lm[256], ls[256], where[256];
                    lanes_text(f.mask, lm, sizeof lm);
                    lanes_text(same, ls, sizeof ls);
                    fatal("line %d: %s in wavefront %d of %s has mask 0x%016llx (lanes %s), but the lanes that "
                          "reach it with that mask are %s. Every lane named in the mask must execute the same call "
                          "with the same mask (HIP asserts this); on a wavefront of 64 a 32-bit mask names half of it: "
                          "use __activemask() or a 64-bit mask",
                          f.line, f.what, base / kWave, kernel_where(w, where, sizeof where),
                          static_cast<unsigned long long>(f.mask), lm[0] ? lm : "none", ls);
                }
            }
            const int src = base + (f.src & (kWave - 1));
            const bool src_active = src < end && ((exec >> (src - base)) & 1);
            f.reply.value = src_active ? w->fibers[src].value : 0;
            f.reply.ballot = ballot;
            f.reply.exec = exec;
        }
        for (int i = base; i < end; ++i)
            if (w->fibers[i].state == WAVE) w->fibers[i].state = READY;
        any = true;
    }
    return any;
}

// Every fiber is at a barrier or done: release the barrier, or report the deadlock. False when all are done.
static bool settle_barrier(Worker* w, int n) {
    int waiting = 0, count = 0, first = -1, other = -1;
    for (int i = 0; i < n; ++i) {
        Fiber& f = w->fibers[i];
        if (f.state != BARRIER) continue;
        ++waiting;
        count += f.pred;
        if (first < 0) first = i;
        else if (other < 0 && f.line != w->fibers[first].line) other = i;
    }
    if (!waiting) return false;
    char where[256];
    if (other >= 0) {
        int a = 0, b = 0;
        for (int i = 0; i < n; ++i) {
            if (w->fibers[i].state != BARRIER) continue;
            if (w->fibers[i].line == w->fibers[first].line) ++a;
            else if (w->fibers[i].line == w->fibers[other].line) ++b;
        }
        fatal("deadlock: the threads of %s wait at different barriers: %d at line %d, %d at line %d%s. Every thread "
              "of a block must reach the same __syncthreads (a barrier inside a branch that not all threads take "
              "hangs or corrupts the block on a GPU)",
              kernel_where(w, where, sizeof where), a, w->fibers[first].line, b, w->fibers[other].line,
              waiting > a + b ? " (and others elsewhere)" : "");
    }
    if (waiting < n) {
        char b[64];
        block_name(w, b, sizeof b);
        fatal("deadlock: %d of %d threads of block %s wait at line %d, the others have exited (kernel %s, launched "
              "at line %d). Every thread of a block must reach each __syncthreads: do not return before a barrier, "
              "guard the work instead (if (i < n) { ... })",
              waiting, n, b, w->fibers[first].line, w->spec->kernel, w->spec->line);
    }
    for (int i = 0; i < n; ++i) {
        w->fibers[i].count = count;
        w->fibers[i].state = READY;
    }
    return true;
}

static void run_block(Worker* w, const LaunchSpec& s, int b) {
    const unsigned gx = s.grid.x, gy = s.grid.y;
    t_block.idx = uint3{b % gx, (b / gx) % gy, b / (gx * gy)};
    t_block.dim = uint3{s.block.x, s.block.y, s.block.z};
    t_block.grid = uint3{s.grid.x, s.grid.y, s.grid.z};
    w->spec = &s;
    w->block_linear.store(b);
    const int n = static_cast<int>(s.block.x * s.block.y * s.block.z);
    w->nthreads = n;
    for (int i = 0; i < n; ++i) {
        Fiber& f = w->fibers[i];
        f.coords.idx = uint3{i % s.block.x, (i / s.block.x) % s.block.y, i / (s.block.x * s.block.y)};
        f.coords.linear = static_cast<unsigned>(i);
        f.state = READY;
        start_fiber(w, &f, i);
    }
    for (;;) {
        for (int i = 0; i < n; ++i)
            if (w->fibers[i].state == READY) resume(w, &w->fibers[i]);
        if (settle_waves(w, n)) continue;
        if (!settle_barrier(w, n)) break;
    }
    w->block_linear.store(-1);
}

// --- launches: a pool of workers takes blocks from a shared counter ----------------------------------------
// never destroyed: the pool threads still wait on them while the program exits
static std::mutex& g_pool_mu = *new std::mutex;
static std::condition_variable& g_pool_cv = *new std::condition_variable;
static std::condition_variable& g_done_cv = *new std::condition_variable;
static const LaunchSpec* g_spec = nullptr;
static std::atomic<long> g_next_block{0};
static long g_total_blocks = 0;
static unsigned long g_generation = 0;
static int g_busy = 0;
static int g_pool_size = 0;   // detached threads: they never end before the program
static std::atomic<bool> g_in_kernel{false};
static std::atomic<long> g_launches{0};
static std::atomic<long long> g_threads_run{0};
static double g_start_s = 0;   // when the program started (the sandbox's clock starts about then)

static double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void work_on(const LaunchSpec* s) {
    Worker* w = this_worker();
    for (;;) {
        long b = g_next_block.fetch_add(1);
        if (b >= g_total_blocks) break;
        run_block(w, *s, static_cast<int>(b));
    }
    w->spec = nullptr;
}

static void pool_thread() {
    unsigned long seen = 0;
    for (;;) {
        const LaunchSpec* s;
        {
            std::unique_lock<std::mutex> g(g_pool_mu);
            g_pool_cv.wait(g, [&] { return g_generation != seen; });
            seen = g_generation;
            s = g_spec;
        }
        work_on(s);
        {
            std::lock_guard<std::mutex> g(g_pool_mu);
            if (--g_busy == 0) g_done_cv.notify_all();
        }
    }
}

static void watchdog_thread(double deadline) {
    for (;;) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, nullptr);
        if (now_s() - g_start_s < deadline || !g_in_kernel.load()) continue;
        std::lock_guard<std::mutex> g(g_workers_mu);
        bool named = false;
        for (Worker* w : g_workers) {
            Fiber* f = w->cur.load();
            if (!f || !w->spec) continue;
            char b[64];
            block_name(w, b, sizeof b);
            named = true;
            report("time limit: after %.1f s, thread (%u,%u,%u) of block %s of kernel %s (launched at line %d) is "
                  "still running without reaching a barrier or returning: an infinite loop (a loop whose "
                  "condition never changes, or a spin-wait on another thread: the simulator runs a thread until "
                  "it waits), or more work than the simulator does in the time limit (use a smaller size)",
                  now_s() - g_start_s, f->coords.idx.x, f->coords.idx.y, f->coords.idx.z, b, w->spec->kernel,
                  w->spec->line);
            break;
        }
        if (!named)
            report("time limit: after %.1f s a kernel is still running (more work than the simulator does in the "
                   "time limit?)", now_s() - g_start_s);
        return;   // the sandbox stops the program at its limit: a time-out, as for any program
    }
}

static void install_fault_handler();
static void at_exit_label();
__attribute__((constructor)) static void note_start() { g_start_s = now_s(); }

static void init_once() {
    static bool done = false;
    if (done) return;
    done = true;
    install_fault_handler();
    std::atexit(at_exit_label);
    const double deadline = env_double("HIPSIM_DEADLINE_S", 0);
    if (deadline > 0) std::thread(watchdog_thread, deadline).detach();
}

static void run_now(const LaunchSpec& s) {
    init_once();
    const int workers = static_cast<int>(env_long("HIPSIM_WORKERS", 2));
    {
        std::lock_guard<std::mutex> g(g_pool_mu);
        for (; g_pool_size < workers - 1; ++g_pool_size) std::thread(pool_thread).detach();
    }
    g_total_blocks = static_cast<long>(s.grid.x) * s.grid.y * s.grid.z;
    g_next_block.store(0);
    g_in_kernel.store(true);
    const int helpers = static_cast<int>(std::min<long>(g_pool_size, g_total_blocks - 1));
    if (helpers > 0) {
        std::lock_guard<std::mutex> g(g_pool_mu);
        g_spec = &s;
        g_busy = g_pool_size;
        ++g_generation;
        g_pool_cv.notify_all();
    }
    work_on(&s);
    if (helpers > 0) {
        std::unique_lock<std::mutex> g(g_pool_mu);
        g_done_cv.wait(g, [] { return g_busy == 0; });
    }
    g_in_kernel.store(false);
    g_launches.fetch_add(1);
    g_threads_run.fetch_add(static_cast<long long>(g_total_blocks) * s.block.x * s.block.y * s.block.z);
}

// --- errors ----------------------------------------------------------------------------------------------------
static thread_local hipError_t t_last_error = hipSuccess;
static hipError_t set_error(hipError_t e) {
    if (e != hipSuccess) t_last_error = e;
    return e;
}

}  // namespace hipsim

using namespace hipsim;

// --- memory: every hipMalloc buffer ends at a guard page ------------------------------------------------------
namespace hipsim {
struct Alloc {
    uintptr_t map_lo, map_hi, start, end;
    size_t bytes;
    int live;
};
static const int kMaxAllocs = 1 << 14;
static Alloc g_allocs[kMaxAllocs];
static std::atomic<int> g_nallocs{0};
static std::mutex& g_alloc_mu = *new std::mutex;
static size_t g_allocated = 0;
static const size_t kTotalMemory = 192ull << 30;   // MI300X's HBM, as the device reports it
static thread_local const char* t_api = nullptr;  // the host API call running (for fault messages)

static void* guarded_alloc(size_t bytes) {
    const size_t data = (std::max<size_t>(bytes, 1) + 15) & ~size_t(15);
    const size_t pages = (data + kPage - 1) / kPage;
    const size_t total = (pages + 2) * kPage;
    void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    char* lo = static_cast<char*>(p);
    mprotect(lo, kPage, PROT_NONE);
    mprotect(lo + total - kPage, kPage, PROT_NONE);
    char* end = lo + total - kPage;
    char* start = end - data;
    std::lock_guard<std::mutex> g(g_alloc_mu);
    int slot = -1;
    for (int i = 0; i < g_nallocs.load(); ++i)
        if (!g_allocs[i].live && g_allocs[i].map_lo == 0) { slot = i; break; }
    if (slot < 0 && g_nallocs.load() < kMaxAllocs) slot = g_nallocs.fetch_add(1);
    if (slot >= 0) {
        g_allocs[slot] = Alloc{reinterpret_cast<uintptr_t>(lo), reinterpret_cast<uintptr_t>(lo) + total,
                               reinterpret_cast<uintptr_t>(start), reinterpret_cast<uintptr_t>(start) + bytes, bytes, 1};
    }
    g_allocated += bytes;
    return start;
}

static Alloc* find_alloc(const void* p, bool live_only = true) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    for (int i = 0; i < g_nallocs.load(); ++i) {
        Alloc& r = g_allocs[i];
        if ((r.live || !live_only) && a >= r.map_lo && a < r.map_hi) return &r;
    }
    return nullptr;
}

static hipError_t guarded_free(void* p) {
    if (!p) return hipSuccess;
    std::lock_guard<std::mutex> g(g_alloc_mu);
    Alloc* r = find_alloc(p);
    if (!r || r->start != reinterpret_cast<uintptr_t>(p)) {
        Alloc* dead = find_alloc(p, false);
        std::fprintf(stderr, "%s hipFree(%p): %s\n", kLabel, p,
                     dead ? "this buffer was already freed" : "not a pointer hipMalloc returned");
        return hipErrorInvalidValue;
    }
    munmap(reinterpret_cast<void*>(r->map_lo), r->map_hi - r->map_lo);
    r->live = 0;           // kept (map_lo set) so a later fault can say "freed"
    g_allocated -= r->bytes;
    return hipSuccess;
}

// A copy or memset that runs past the end of a hipMalloc buffer: HIP refuses it (hipErrorInvalidValue).
static bool range_ok(const void* p, size_t bytes, const char* api, const char* which) {
    std::lock_guard<std::mutex> g(g_alloc_mu);
    Alloc* r = find_alloc(p);
    if (!r) return true;   // host memory: not checked
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (a < r->start || a + bytes > r->end) {
        std::fprintf(stderr, "%s %s: the %s range [%p, +%zu bytes) runs past a hipMalloc buffer of %zu bytes "
                     "(it starts %lld bytes into it): hipErrorInvalidValue\n", kLabel, api, which, p, bytes, r->bytes,
                     static_cast<long long>(a - r->start));
        return false;
    }
    return true;
}

// --- faults: a clear message, never a bare "Segmentation fault" --------------------------------------------------
static void on_fault(int sig, siginfo_t* info, void*) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
    char what[512];
    Alloc* r = nullptr;
    for (int i = 0; i < g_nallocs.load(); ++i)
        if (g_allocs[i].map_lo && a >= g_allocs[i].map_lo && a < g_allocs[i].map_hi) { r = &g_allocs[i]; break; }
    if (r && r->live && a >= r->end)
        std::snprintf(what, sizeof what, "address %p is %llu bytes past the end of a hipMalloc buffer of %zu bytes "
                      "(element %lld of a float array of %zu): an out-of-bounds access",
                      info->si_addr, static_cast<unsigned long long>(a - r->end), r->bytes,
                      static_cast<long long>((a - r->start) / 4), r->bytes / 4);
    else if (r && r->live)
        std::snprintf(what, sizeof what, "address %p is %llu bytes before the start of a hipMalloc buffer of %zu "
                      "bytes: an out-of-bounds access (a negative index?)", info->si_addr,
                      static_cast<unsigned long long>(r->start - a), r->bytes);
    else if (r)
        std::snprintf(what, sizeof what, "address %p lies in a buffer that hipFree already released: a use after free",
                      info->si_addr);
    else if (a < 65536)
        std::snprintf(what, sizeof what, "address %p: a null pointer (an unallocated or unset buffer?)", info->si_addr);
    else {
        bool stack = false;
        for (Worker* w : g_workers)
            if (a >= reinterpret_cast<uintptr_t>(w->stacks) &&
                a < reinterpret_cast<uintptr_t>(w->stacks) + w->stack_bytes * kMaxThreads) stack = true;
        if (stack)
            std::snprintf(what, sizeof what, "a thread's stack overflowed (the simulator gives each GPU thread %ld "
                          "KiB: a large local array or deep recursion?)", env_long("HIPSIM_STACK_KB", 64));
        else
            std::snprintf(what, sizeof what, "address %p is in no hipMalloc buffer: far out of bounds, or a pointer "
                          "that was never allocated", info->si_addr);
    }
    Worker* w = t_worker;
    Fiber* f = w ? w->cur.load() : nullptr;
    if (f && w->spec) {
        char b[64];
        block_name(w, b, sizeof b);
        report("%s in thread (%u,%u,%u) of block %s of kernel %s (launched at line %d)", what, f->coords.idx.x,
               f->coords.idx.y, f->coords.idx.z, b, w->spec->kernel, w->spec->line);
    } else {
        report("%s in host code%s%s", what, t_api ? ", in " : "", t_api ? t_api : "");
    }
    signal(sig, SIG_DFL);   // returning re-runs the access: the program ends with the signal, as on the host
}

static void install_fault_handler() {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
    this_worker();   // the main thread's alternate signal stack
}

static bool g_time_note = false;
static void at_exit_label() {
    if (g_launches.load() == 0) return;
    std::fflush(stdout);
    std::fprintf(stderr, "%s %ld kernel launch(es), %lld GPU threads run on the CPU in wavefronts of 64 "
                 "(gfx942 semantics)%s\n", kLabel, g_launches.load(), g_threads_run.load(),
                 g_time_note ? "; event times are not measured (NaN)" : "");
}
}  // namespace hipsim

// --- the HIP API ---------------------------------------------------------------------------------------------------
struct ihipEvent_t { long order = 0; bool recorded = false; };
struct ihipGraph_t { std::vector<std::function<void()>> nodes; };
struct ihipGraphExec_t { std::vector<std::function<void()>> nodes; };
struct ihipStream_t { ihipGraph_t* capture = nullptr; };
static std::atomic<long> g_event_order{0};

static ihipGraph_t* capturing(hipStream_t s) { return s ? s->capture : nullptr; }

namespace hipsim {
hipError_t launch(const LaunchSpec& spec, hipStream_t stream) {
    init_once();
    const unsigned long long threads = 1ull * spec.block.x * spec.block.y * spec.block.z;
    if (threads == 0 || threads > static_cast<unsigned>(kMaxThreads) || spec.block.z > 1024 ||
        1ull * spec.grid.x * spec.grid.y * spec.grid.z == 0 || spec.grid.y > 65535 || spec.grid.z > 65535) {
        std::fprintf(stderr, "%s launch of %s at line %d: grid (%u,%u,%u) of blocks (%u,%u,%u) is not a valid "
                     "configuration (at most 1024 threads per block, none empty): hipErrorInvalidConfiguration\n",
                     kLabel, spec.kernel, spec.line, spec.grid.x, spec.grid.y, spec.grid.z, spec.block.x, spec.block.y,
                     spec.block.z);
        spec.destroy(spec.state);
        return set_error(hipErrorInvalidConfiguration);
    }
    if (spec.shared_bytes > kSharedBytes) {
        std::fprintf(stderr, "%s launch of %s at line %d asks for %zu bytes of dynamic shared memory; gfx942 has %zu "
                     "per block: hipErrorInvalidValue\n", kLabel, spec.kernel, spec.line, spec.shared_bytes, kSharedBytes);
        spec.destroy(spec.state);
        return set_error(hipErrorInvalidValue);
    }
    if (ihipGraph_t* g = capturing(stream)) {
        std::shared_ptr<void> state(spec.state, spec.destroy);
        LaunchSpec copy = spec;
        g->nodes.push_back([copy, state]() mutable { LaunchSpec s = copy; s.state = state.get(); run_now(s); });
        return hipSuccess;
    }
    run_now(spec);
    spec.destroy(spec.state);
    return hipSuccess;
}
}  // namespace hipsim

const char* hipGetErrorName(hipError_t e) {
    switch (e) {
#define N(x) case x: return #x;
        N(hipSuccess) N(hipErrorInvalidValue) N(hipErrorOutOfMemory) N(hipErrorNotInitialized)
        N(hipErrorInvalidConfiguration) N(hipErrorInvalidSymbol) N(hipErrorInvalidDevicePointer)
        N(hipErrorInvalidMemcpyDirection) N(hipErrorNoDevice) N(hipErrorInvalidDevice) N(hipErrorInvalidHandle)
        N(hipErrorNotReady) N(hipErrorLaunchFailure) N(hipErrorNotSupported) N(hipErrorStreamCaptureUnsupported)
        N(hipErrorStreamCaptureInvalidated) N(hipErrorUnknown)
#undef N
    }
    return "hipErrorUnknown";
}
const char* hipGetErrorString(hipError_t e) {
    switch (e) {
        case hipSuccess: return "no error";
        case hipErrorInvalidValue: return "invalid argument";
        case hipErrorOutOfMemory: return "out of memory";
        case hipErrorInvalidConfiguration: return "invalid configuration argument";
        case hipErrorInvalidDevice: return "invalid device ordinal";
        case hipErrorInvalidHandle: return "invalid resource handle";
        case hipErrorNotReady: return "device not ready";
        case hipErrorNotSupported: return "operation not supported";
        default: return hipGetErrorName(e);
    }
}
hipError_t hipGetLastError() { hipError_t e = t_last_error; t_last_error = hipSuccess; return e; }
hipError_t hipPeekAtLastError() { return t_last_error; }
hipError_t hipGetDeviceCount(int* n) { if (!n) return set_error(hipErrorInvalidValue); *n = 1; return hipSuccess; }
hipError_t hipSetDevice(int d) { return d == 0 ? hipSuccess : set_error(hipErrorInvalidDevice); }
hipError_t hipGetDevice(int* d) { if (!d) return set_error(hipErrorInvalidValue); *d = 0; return hipSuccess; }
// The simulator's compute units are its CPU threads (HIPSIM_WORKERS): a program that sizes its grid to the
// device (CUs x 8 blocks) launches what the CPU can run, not MI300X's 304 CUs' worth of fibers.
static int cus() { return static_cast<int>(env_long("HIPSIM_CUS", env_long("HIPSIM_WORKERS", 2))); }
hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d) {
    if (!p) return set_error(hipErrorInvalidValue);
    if (d != 0) return set_error(hipErrorInvalidDevice);
    std::memset(p, 0, sizeof *p);
    std::snprintf(p->name, sizeof p->name, "cpu: wave64 simulator (gfx942 semantics)");
    std::snprintf(p->gcnArchName, sizeof p->gcnArchName, "gfx942:sramecc+:xnack-");
    p->totalGlobalMem = kTotalMemory;
    p->sharedMemPerBlock = kSharedBytes;
    p->sharedMemPerMultiprocessor = p->maxSharedMemoryPerMultiProcessor = kSharedBytes;
    p->totalConstMem = 2ull << 30;
    p->l2CacheSize = 4 << 20;
    p->regsPerBlock = 512 * 64;
    p->warpSize = kWave;
    p->maxThreadsPerBlock = kMaxThreads;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = p->maxThreadsDim[2] = 1024;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->clockRate = 2100000;
    p->memoryClockRate = 1300000;
    p->memoryBusWidth = 8192;
    p->multiProcessorCount = cus();
    p->major = 9;
    p->minor = 4;
    p->maxThreadsPerMultiProcessor = 2048;
    p->concurrentKernels = 1;
    p->managedMemory = p->canMapHostMemory = p->unifiedAddressing = p->cooperativeLaunch = 1;
    return hipSuccess;
}
hipError_t hipDeviceGetAttribute(int* v, hipDeviceAttribute_t a, int d) {
    if (!v) return set_error(hipErrorInvalidValue);
    hipDeviceProp_t p;
    hipError_t e = hipGetDeviceProperties(&p, d);
    if (e != hipSuccess) return e;
    switch (a) {
        case hipDeviceAttributeMaxThreadsPerBlock: *v = p.maxThreadsPerBlock; break;
        case hipDeviceAttributeMaxBlockDimX: case hipDeviceAttributeMaxBlockDimY: case hipDeviceAttributeMaxBlockDimZ: *v = 1024; break;
        case hipDeviceAttributeMaxGridDimX: *v = p.maxGridSize[0]; break;
        case hipDeviceAttributeMaxGridDimY: case hipDeviceAttributeMaxGridDimZ: *v = 65535; break;
        case hipDeviceAttributeMaxSharedMemoryPerBlock: case hipDeviceAttributeSharedMemPerBlockOptin:
        case hipDeviceAttributeMaxSharedMemoryPerMultiprocessor: *v = static_cast<int>(kSharedBytes); break;
        case hipDeviceAttributeTotalConstantMemory: *v = 2147483647; break;
        case hipDeviceAttributeWarpSize: *v = kWave; break;
        case hipDeviceAttributeMaxRegistersPerBlock: *v = p.regsPerBlock; break;
        case hipDeviceAttributeClockRate: *v = p.clockRate; break;
        case hipDeviceAttributeMemoryClockRate: *v = p.memoryClockRate; break;
        case hipDeviceAttributeMemoryBusWidth: *v = p.memoryBusWidth; break;
        case hipDeviceAttributeMultiprocessorCount: *v = p.multiProcessorCount; break;
        case hipDeviceAttributeComputeCapabilityMajor: *v = 9; break;
        case hipDeviceAttributeComputeCapabilityMinor: *v = 4; break;
        case hipDeviceAttributeL2CacheSize: *v = static_cast<int>(p.l2CacheSize); break;
        case hipDeviceAttributeMaxThreadsPerMultiProcessor: *v = p.maxThreadsPerMultiProcessor; break;
        default: return set_error(hipErrorInvalidValue);
    }
    return hipSuccess;
}
hipError_t hipDeviceSynchronize() { return hipSuccess; }
hipError_t hipDeviceReset() { return hipSuccess; }
hipError_t hipRuntimeGetVersion(int* v) { if (v) *v = HIP_VERSION; return hipSuccess; }
hipError_t hipDriverGetVersion(int* v) { if (v) *v = HIP_VERSION; return hipSuccess; }
hipError_t hipMemGetInfo(size_t* f, size_t* t) {
    if (!f || !t) return set_error(hipErrorInvalidValue);
    *t = kTotalMemory;
    *f = kTotalMemory - g_allocated;
    return hipSuccess;
}
hipError_t hipMalloc(void** p, size_t bytes) {
    if (!p) return set_error(hipErrorInvalidValue);
    if (bytes == 0) { *p = nullptr; return hipSuccess; }
    *p = guarded_alloc(bytes);
    if (!*p) {
        std::fprintf(stderr, "%s hipMalloc(%zu bytes): out of memory (the simulator's memory is the sandbox's)\n",
                     kLabel, bytes);
        return set_error(hipErrorOutOfMemory);
    }
    return hipSuccess;
}
hipError_t hipMallocManaged(void** p, size_t bytes, unsigned) { return hipMalloc(p, bytes); }
hipError_t hipHostMalloc(void** p, size_t bytes, unsigned) { return hipMalloc(p, bytes); }
hipError_t hipMallocHost(void** p, size_t bytes) { return hipMalloc(p, bytes); }
hipError_t hipHostAlloc(void** p, size_t bytes, unsigned) { return hipMalloc(p, bytes); }
hipError_t hipMallocAsync(void** p, size_t bytes, hipStream_t) { return hipMalloc(p, bytes); }
hipError_t hipFree(void* p) { return set_error(guarded_free(p)); }
hipError_t hipHostFree(void* p) { return hipFree(p); }
hipError_t hipFreeHost(void* p) { return hipFree(p); }
hipError_t hipFreeAsync(void* p, hipStream_t) { return hipFree(p); }

static hipError_t do_memcpy(void* dst, const void* src, size_t bytes, const char* api) {
    if (bytes == 0) return hipSuccess;
    if (!dst || !src) return set_error(hipErrorInvalidValue);
    if (!range_ok(dst, bytes, api, "destination") || !range_ok(src, bytes, api, "source"))
        return set_error(hipErrorInvalidValue);
    t_api = api;
    std::memmove(dst, src, bytes);
    t_api = nullptr;
    return hipSuccess;
}
static hipError_t do_memset(void* dst, int v, size_t bytes, const char* api) {
    if (bytes == 0) return hipSuccess;
    if (!dst || !range_ok(dst, bytes, api, "destination")) return set_error(hipErrorInvalidValue);
    t_api = api;
    std::memset(dst, v, bytes);
    t_api = nullptr;
    return hipSuccess;
}
hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind) {
    return do_memcpy(dst, src, bytes, "hipMemcpy");
}
hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind, hipStream_t s) {
    if (ihipGraph_t* g = capturing(s)) {
        g->nodes.push_back([=] { do_memcpy(dst, src, bytes, "hipMemcpyAsync (graph)"); });
        return hipSuccess;
    }
    return do_memcpy(dst, src, bytes, "hipMemcpyAsync");
}
hipError_t hipMemset(void* dst, int v, size_t bytes) { return do_memset(dst, v, bytes, "hipMemset"); }
hipError_t hipMemsetAsync(void* dst, int v, size_t bytes, hipStream_t s) {
    if (ihipGraph_t* g = capturing(s)) {
        g->nodes.push_back([=] { do_memset(dst, v, bytes, "hipMemsetAsync (graph)"); });
        return hipSuccess;
    }
    return do_memset(dst, v, bytes, "hipMemsetAsync");
}
hipError_t hipMemcpy2D(void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, hipMemcpyKind) {
    if (w > dp || w > sp) return set_error(hipErrorInvalidValue);
    for (size_t r = 0; r < h; ++r) {
        hipError_t e = do_memcpy(static_cast<char*>(dst) + r * dp, static_cast<const char*>(src) + r * sp, w, "hipMemcpy2D");
        if (e != hipSuccess) return e;
    }
    return hipSuccess;
}
hipError_t hipStreamCreate(hipStream_t* s) { if (!s) return set_error(hipErrorInvalidValue); *s = new ihipStream_t(); return hipSuccess; }
hipError_t hipStreamCreateWithFlags(hipStream_t* s, unsigned) { return hipStreamCreate(s); }
hipError_t hipStreamCreateWithPriority(hipStream_t* s, unsigned, int) { return hipStreamCreate(s); }
hipError_t hipStreamDestroy(hipStream_t s) { if (!s) return set_error(hipErrorInvalidHandle); delete s; return hipSuccess; }
hipError_t hipStreamSynchronize(hipStream_t) { return hipSuccess; }
hipError_t hipStreamQuery(hipStream_t) { return hipSuccess; }
hipError_t hipStreamWaitEvent(hipStream_t, hipEvent_t e, unsigned) { return e ? hipSuccess : set_error(hipErrorInvalidHandle); }
hipError_t hipEventCreate(hipEvent_t* e) { if (!e) return set_error(hipErrorInvalidValue); *e = new ihipEvent_t(); return hipSuccess; }
hipError_t hipEventCreateWithFlags(hipEvent_t* e, unsigned) { return hipEventCreate(e); }
hipError_t hipEventDestroy(hipEvent_t e) { if (!e) return set_error(hipErrorInvalidHandle); delete e; return hipSuccess; }
hipError_t hipEventRecord(hipEvent_t e, hipStream_t) {
    if (!e) return set_error(hipErrorInvalidHandle);
    e->order = ++g_event_order;
    e->recorded = true;
    return hipSuccess;
}
hipError_t hipEventSynchronize(hipEvent_t e) { return e ? hipSuccess : set_error(hipErrorInvalidHandle); }
hipError_t hipEventQuery(hipEvent_t e) { return e ? hipSuccess : set_error(hipErrorInvalidHandle); }
hipError_t hipEventElapsedTime(float* ms, hipEvent_t a, hipEvent_t b) {
    if (!ms || !a || !b) return set_error(hipErrorInvalidHandle);
    if (!a->recorded || !b->recorded) return set_error(hipErrorInvalidHandle);
    if (!hipsim::g_time_note) {
        hipsim::g_time_note = true;
        std::fprintf(stderr, "%s hipEventElapsedTime: the simulator records the order of events, not time; it "
                     "reports NaN ms (time kernels on a GPU)\n", hipsim::kLabel);
    }
    *ms = NAN;
    return hipSuccess;
}
hipError_t hipStreamBeginCapture(hipStream_t s, hipStreamCaptureMode) {
    if (!s) {
        std::fprintf(stderr, "%s hipStreamBeginCapture: the null stream cannot be captured; create a stream\n", kLabel);
        return set_error(hipErrorStreamCaptureUnsupported);
    }
    if (s->capture) return set_error(hipErrorInvalidValue);
    s->capture = new ihipGraph_t();
    return hipSuccess;
}
hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t* g) {
    if (!s || !g || !s->capture) return set_error(hipErrorInvalidValue);
    *g = s->capture;
    s->capture = nullptr;
    return hipSuccess;
}
hipError_t hipStreamIsCapturing(hipStream_t s, hipStreamCaptureStatus* st) {
    if (!st) return set_error(hipErrorInvalidValue);
    *st = capturing(s) ? hipStreamCaptureStatusActive : hipStreamCaptureStatusNone;
    return hipSuccess;
}
hipError_t hipGraphInstantiate(hipGraphExec_t* e, hipGraph_t g, hipGraphNode_t*, char*, size_t) {
    if (!e || !g) return set_error(hipErrorInvalidValue);
    *e = new ihipGraphExec_t{g->nodes};
    return hipSuccess;
}
hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t* e, hipGraph_t g, unsigned long long) {
    return hipGraphInstantiate(e, g);
}
hipError_t hipGraphLaunch(hipGraphExec_t e, hipStream_t s) {
    if (!e) return set_error(hipErrorInvalidHandle);
    if (ihipGraph_t* g = capturing(s)) {
        for (auto& n : e->nodes) g->nodes.push_back(n);
        return hipSuccess;
    }
    for (auto& n : e->nodes) n();
    return hipSuccess;
}
hipError_t hipGraphExecDestroy(hipGraphExec_t e) { if (!e) return set_error(hipErrorInvalidHandle); delete e; return hipSuccess; }
hipError_t hipGraphDestroy(hipGraph_t g) { if (!g) return set_error(hipErrorInvalidHandle); delete g; return hipSuccess; }
hipError_t hipGraphGetNodes(hipGraph_t g, hipGraphNode_t* nodes, size_t* n) {
    if (!g || !n) return set_error(hipErrorInvalidValue);
    if (nodes) for (size_t i = 0; i < *n && i < g->nodes.size(); ++i) nodes[i] = &g->nodes[i];
    *n = g->nodes.size();
    return hipSuccess;
}
hipError_t hipFuncSetAttribute(const void*, int, int) { return hipSuccess; }
