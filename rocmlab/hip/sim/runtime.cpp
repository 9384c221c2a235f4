// runtime.cpp: rocmlab's CPU simulator of HIP kernels with MI300X's wavefront of 64 ("[cpu: wave64 simulator]").
//
// A launch hands its blocks to a few CPU threads (workers). A worker runs one block at a time: each thread of
// the block is a fiber with its own stack. The fibers run in rounds: in each round every ready fiber runs until
// its next store or its first load after a store (lockstep, see on_access: all active lanes of a wavefront
// perform their k-th store before any performs its (k+1)-th, and load what every lane stored before, as a CDNA3
// wavefront issues a load or store for its 64 lanes together), a meeting point (a cross-lane operation or a
// barrier), or its end. When no fiber of a wavefront is still on its
// way, the scheduler settles what they wait for:
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

#include <algorithm>
#include <climits>
#include <string>

#include <cerrno>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__) || defined(HIPSIM_UCONTEXT)
#define HIPSIM_USE_UCONTEXT 1
#include <ucontext.h>
#endif

namespace hipsim {

static const int kWave = 64;
static const int kMaxThreads = 1024;
static const int kRounds = 256;              // rounds a wavefront runs before the next one (run_block)
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

// --- the simulator's own channel ---------------------------------------------------------------------------
// Findings and the simulator's errors go to a duplicate of the stderr the program was started with, taken
// before main (a constructor) at a high descriptor, written with one write(2) per line as they are found: a
// program that reopens stderr on /dev/null, closes fd 2, or ends with _exit() does not silence them. Each
// write checks that the descriptor is still the file it was (device and inode): a program that closed it or put
// another file in its place is stopped (status 86) rather than allowed to run on unheard.
static int g_chan = -1;
static dev_t g_chan_dev = 0;
static ino_t g_chan_ino = 0;
__attribute__((constructor(101))) static void open_channel() {
    int fd = fcntl(2, F_DUPFD_CLOEXEC, 512);
    if (fd < 0) fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) { g_chan = fd; g_chan_dev = st.st_dev; g_chan_ino = st.st_ino; }
}
static void channel_write(const char* s, size_t n) {
    struct stat st;
    const bool same = g_chan >= 0 && fstat(g_chan, &st) == 0 && st.st_dev == g_chan_dev && st.st_ino == g_chan_ino;
    const int fd = same ? g_chan : 2;
    while (n > 0) {
        const ssize_t k = write(fd, s, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        s += k;
        n -= static_cast<size_t>(k);
    }
    if (!same) {
        static const char msg[] = "[cpu: wave64 simulator] error: the program closed or replaced the simulator's "
                                  "report channel (a descriptor it opened before main): stopped\n";
        if (write(2, msg, sizeof msg - 1) < 0) {}
        _exit(86);
    }
}
// One line "[cpu: wave64 simulator] <text>\n" on the channel.
static void emit(const char* fmt, ...) {
    char buf[4096];
    int n = std::snprintf(buf, sizeof buf, "%s ", kLabel);
    va_list ap;
    va_start(ap, fmt);
    int k = std::vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
    va_end(ap);
    if (k < 0) k = 0;
    n = std::min<int>(n + k, static_cast<int>(sizeof buf) - 2);
    buf[n++] = '\n';
    std::fflush(stdout);
    std::fflush(stderr);
    channel_write(buf, static_cast<size_t>(n));
}

static void vreport(const char* fmt, va_list ap) {
    char buf[2048];
    int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
    if (n < 0) buf[0] = 0;
    emit("error: %s", buf);
}
static void report(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
}
// The program stops here (a deadlock, a divergent wavefront operation, a bad mask): exit status 86.
static void flush_findings();
[[noreturn]] void fatal(const char* fmt, ...) {
    flush_findings();
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    _exit(kExitCode);
}

// --- fibers ---------------------------------------------------------------------------------------------
enum State { READY = 0, WAVE = 1, BARRIER = 2, DONE = 3, STOPPED = 4 };   // STOPPED: at an out-of-bounds LDS access

// What every access touches (coords, state, stored, oob_type, the stack pointer) lies in the first cache line.
struct alignas(64) Fiber {
    ThreadCoords coords;
    int state = DONE;
    bool stored = false;   // lockstep: it stored since it last handed back the CPU (its next load waits for the round)
    // an array index past a fixed extent (the compiler's bounds check, __ubsan_handle_out_of_bounds), judged at the
    // access that follows it: the array's type as the compiler names it, and the index
    const void* oob_type = nullptr;
    long long oob_index = 0;
#ifndef HIPSIM_USE_UCONTEXT
    void* sp = nullptr;
#endif
    // what it waits for
    uint64_t value = 0, mask = 0;
    int src = 0, pred = 0, has_mask = 0, line = 0;
    const char* what = "";
    // what it gets back
    Exchange reply{0, 0, 0};
    int count = 0;
#ifdef HIPSIM_USE_UCONTEXT
    ucontext_t ctx;
#endif
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
    bool solo = false;                // lockstep: the round's one ready fiber (it runs on to its meeting point)
    Fiber* round_end = nullptr;       // the end of the lanes of the round now running (to_scheduler)
    const LaunchSpec* spec = nullptr;
    std::atomic<int> block_linear{-1};
    int nthreads = 0;
    // the sanitizer's view of this CPU thread
    uintptr_t tp = 0;                 // its thread pointer: static LDS (thread_local) lies at fixed offsets below
    char* dyn = nullptr;              // its dynamic shared memory
    struct Shadow* shadow = nullptr;  // one entry per LDS byte (static, then dynamic)
    uint32_t gen = 1, gen0 = 1;       // the barrier interval now, and the block's first
    // findings this thread already reported (tool, code address) and how often they recurred since: a racy
    // loop reports once and then only counts, without a lock
    int nseen = 0;
    int seen_tool[32];
    uintptr_t seen_pc[32];
    long seen_count[32];
    struct Counting* counting = nullptr;   // the counters' lanes-to-instruction grouping (HIPSIM_COUNTERS=1)
    struct WaveWord* words = nullptr;      // racecheck between the block's wavefronts (global memory): wave_race
    uint32_t words_gen = 0;                // the barrier interval words_used counts
    int words_used = 0;                    // entries taken in it
    // an out-of-bounds LDS access in this round: the lanes that reached it (stopped there), reported at the round's end
    int oob_threads = 0, oob_wave = -1;
    uint64_t oob_lanes = 0;
    long long oob_lo = 0, oob_hi = 0;
    uintptr_t oob_pc = 0;
    bool oob_write = false;
    char oob_what[160];
};
static thread_local Worker* t_worker = nullptr;
static thread_local uintptr_t t_state_lo = 0, t_state_hi = 0;   // the running launch's arguments (KernelCall)
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

// A lane hands the CPU on: to the next ready lane of the round (a round resumes each ready lane of a wavefront once,
// in lane order), directly, or to the scheduler after the round's last lane.
static void to_scheduler(Fiber* f) {
    Worker* w = t_worker;
#ifdef HIPSIM_USE_UCONTEXT
    swapcontext(&f->ctx, &w->sched);
#else
    for (Fiber* g = f + 1; g < w->round_end; ++g)
        if (g->state == READY) {
            w->cur.store(g, std::memory_order_relaxed);
            t_thread = &g->coords;
            hipsim_switch(&f->sp, g->sp);
            return;
        }
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

static void sanitizer_attach(Worker* w);
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
    sanitizer_attach(w);
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
    f->stored = false;    // the wavefront's lanes all reach this operation: their stores are done when it runs
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
    f->stored = false;
    to_scheduler(f);
    return f->count;
}
void block_barrier(const char* what, int line) { barrier(0, what, line); }
int block_barrier_count(int pred, const char* what, int line) { return barrier(pred != 0, what, line); }

void* dynamic_shared_base() {
    return this_worker()->dyn;
}

void not_simulated(const char* what, int line) {
    fatal("line %d: %s is not simulated on the CPU: run this program on an AMD GPU", line, what);
}

// Where a lane waits: the operation and its source line. (Not the code address: the compiler may merge the
// calls of two branches into one call instruction.)
static bool same_site(const Fiber& a, const Fiber& b) {
    return a.line == b.line && (a.what == b.what || std::strcmp(a.what, b.what) == 0);
}

// Settle the cross-lane operation of the wavefront of lanes [base, end), none of them ready: its waiting lanes
// stand at one place (else the program stops). True if it ran.
static bool settle_wave(Worker* w, int base, int end) {
    {
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
                fatal("synccheck: divergent wavefront operations in wavefront %d of %s: lanes %s wait at %s (line %d) while "
                      "lanes %s wait at %s (line %d). The simulator cannot tell in which order a GPU would run "
                      "them, so it stops rather than guess: let every active lane of the wavefront reach the same "
                      "cross-lane operation (take it out of the divergent branch)",
                      base / kWave, kernel_where(w, where, sizeof where), lg, g.what, g.line, lf, f.what, f.line);
            }
            exec |= 1ull << (i - base);
            if (f.pred) ballot |= 1ull << (i - base);
        }
        if (first < 0) return false;
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
                    fatal("synccheck: line %d: %s in wavefront %d of %s has mask 0x%016llx (lanes %s), but the lanes that "
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
    }
    return true;
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
        fatal("synccheck: deadlock: the threads of %s wait at different barriers: %d at line %d, %d at line %d%s. Every thread "
              "of a block must reach the same __syncthreads (a barrier inside a branch that not all threads take "
              "hangs or corrupts the block on a GPU)",
              kernel_where(w, where, sizeof where), a, w->fibers[first].line, b, w->fibers[other].line,
              waiting > a + b ? " (and others elsewhere)" : "");
    }
    if (waiting < n) {
        char b[64];
        block_name(w, b, sizeof b);
        fatal("synccheck: deadlock: %d of %d threads of block %s wait at line %d, the others have exited (kernel %s, launched "
              "at line %d). Every thread of a block must reach each __syncthreads: do not return before a barrier, "
              "guard the work instead (if (i < n) { ... })",
              waiting, n, b, w->fibers[first].line, w->spec->kernel, w->spec->line);
    }
    for (int i = 0; i < n; ++i) {
        w->fibers[i].count = count;
        w->fibers[i].state = READY;
    }
    ++w->gen;     // accesses on either side of a barrier never race
    return true;
}

static void counters_settle(Worker* w, int wave, int base, int end);
[[noreturn]] static void lds_oob_stop(Worker* w);
static void counters_block_start(Worker* w, int n);
static void counters_launch_done(const LaunchSpec& s);
static void run_block(Worker* w, const LaunchSpec& s, int b) {
    const unsigned gx = s.grid.x, gy = s.grid.y;
    t_block.idx = uint3{b % gx, (b / gx) % gy, b / (gx * gy)};
    t_block.dim = uint3{s.block.x, s.block.y, s.block.z};
    t_block.grid = uint3{s.grid.x, s.grid.y, s.grid.z};
    w->spec = &s;
    t_state_lo = reinterpret_cast<uintptr_t>(s.state);
    t_state_hi = t_state_lo + s.state_bytes;
    w->gen0 = ++w->gen;   // LDS written by an earlier block counts as never written in this one
    w->block_linear.store(b);
    counters_block_start(w, static_cast<int>(s.block.x * s.block.y * s.block.z));
    const int n = static_cast<int>(s.block.x * s.block.y * s.block.z);
    w->nthreads = n;
    for (int i = 0; i < n; ++i) {
        Fiber& f = w->fibers[i];
        f.coords.idx = uint3{i % s.block.x, (i / s.block.x) % s.block.y, i / (s.block.x * s.block.y)};
        f.coords.linear = static_cast<unsigned>(i);
        f.state = READY;
        f.stored = false;
        start_fiber(w, &f, i);
    }
    // Wavefront by wavefront: a wavefront runs in rounds (every ready lane to its next store, its first load after a
    // store (lockstep), a meeting point or its end) until none of its lanes is ready, its cross-lane operation is
    // settled and it runs on, until every lane waits at a barrier or is done (or kRounds rounds have passed: then the
    // next wavefront runs, so a wavefront waiting on another's stores still sees them). Lockstep binds the lanes of one
    // wavefront only (on a GPU the block's wavefronts run in any order between barriers), and the 64 lanes' stacks stay
    // in the CPU's caches. A lane alone in the block's ready lanes runs on to its meeting point or end.
    const int nwaves = (n + kWave - 1) / kWave;
    int ready_in[kMaxThreads / kWave];
    for (;;) {
        int total = 0;
        for (int v = 0; v < nwaves; ++v) {
            const int base = v * kWave, end = base + kWave < n ? base + kWave : n;
            int r = 0;
            for (int i = base; i < end; ++i) r += w->fibers[i].state == READY;
            ready_in[v] = r;
            total += r;
        }
        for (int v = 0; v < nwaves; ++v) {
            const int base = v * kWave, end = base + kWave < n ? base + kWave : n;
            for (int round = 0;; ++round) {
                if (!ready_in[v]) {
                    if (w->counting) counters_settle(w, v, base, end);
                    if (!settle_wave(w, base, end)) break;     // at a barrier or done
                    int r = 0;
                    for (int i = base; i < end; ++i) r += w->fibers[i].state == READY;
                    total += r;
                    ready_in[v] = r;
                    if (!r) break;
                }
                if (round == kRounds) break;                   // its ready lanes run on in the next pass
                w->solo = total == 1;
#ifdef HIPSIM_USE_UCONTEXT
                for (int i = base; i < end; ++i)
                    if (w->fibers[i].state == READY) resume(w, &w->fibers[i]);
#else
                w->round_end = &w->fibers[end];
                for (int i = base; i < end; ++i)
                    if (w->fibers[i].state == READY) {
                        resume(w, &w->fibers[i]);     // it hands the CPU to the round's next ready lane (to_scheduler)
                        break;
                    }
#endif
                w->solo = false;
                if (w->oob_threads) lds_oob_stop(w);
                int r = 0;
                for (int i = base; i < end; ++i) r += w->fibers[i].state == READY;
                total += r - ready_in[v];
                ready_in[v] = r;
            }
        }
        if (total) continue;
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

static void sanitizer_launch(const LaunchSpec& s);
static void run_now(const LaunchSpec& s) {
    init_once();
    sanitizer_launch(s);
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
    counters_launch_done(s);
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
    uint8_t* written;    // initcheck: one byte per byte of a hipMalloc buffer, 1 once written (null: not checked)
    uint64_t* race;      // racecheck between blocks: per 4-byte word, the last write's and the reads' tags (tag_of)
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
    // aligned as the GPU's allocator aligns a buffer (256 bytes at least: 128-byte lines start where a GPU's do);
    // the sanitizer checks the exact end, the guard page catches runs past the slack without it
    char* start = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(end - data) & ~uintptr_t(255));
    std::lock_guard<std::mutex> g(g_alloc_mu);
    int slot = -1;
    for (int i = 0; i < g_nallocs.load(); ++i)
        if (!g_allocs[i].live && g_allocs[i].map_lo == 0) { slot = i; break; }
    if (slot < 0 && g_nallocs.load() < kMaxAllocs) slot = g_nallocs.fetch_add(1);
    if (slot >= 0) {
        void* sh = mmap(nullptr, data, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        void* rc = mmap(nullptr, data * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        // large pages where the system offers them (transparent huge pages): a kernel's strided reads touch a new
        // 4 KiB page of each shadow at every access, and the TLB misses were most of the checks' cost
        if (sh != MAP_FAILED && data >= (size_t(2) << 20)) madvise(sh, data, MADV_HUGEPAGE);
        if (rc != MAP_FAILED && data >= (size_t(1) << 20)) madvise(rc, data * 2, MADV_HUGEPAGE);
        g_allocs[slot] = Alloc{reinterpret_cast<uintptr_t>(lo), reinterpret_cast<uintptr_t>(lo) + total,
                               reinterpret_cast<uintptr_t>(start), reinterpret_cast<uintptr_t>(start) + bytes, bytes, 1,
                               sh == MAP_FAILED ? nullptr : static_cast<uint8_t*>(sh),
                               rc == MAP_FAILED ? nullptr : static_cast<uint64_t*>(rc)};
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

static std::atomic<unsigned> g_frees{0};   // hipFree calls so far (lookup's cache of recent buffers)
static hipError_t guarded_free(void* p) {
    if (!p) return hipSuccess;
    g_frees.fetch_add(1);
    std::lock_guard<std::mutex> g(g_alloc_mu);
    Alloc* r = find_alloc(p);
    if (!r || r->start != reinterpret_cast<uintptr_t>(p)) {
        Alloc* dead = find_alloc(p, false);
        std::fprintf(stderr, "%s hipFree(%p): %s\n", kLabel, p,
                     dead ? "this buffer was already freed" : "not a pointer hipMalloc returned");
        return hipErrorInvalidValue;
    }
    munmap(reinterpret_cast<void*>(r->map_lo), r->map_hi - r->map_lo);
    if (r->written) munmap(r->written, (r->bytes + 15) & ~size_t(15));
    if (r->race) munmap(r->race, ((r->bytes + 15) & ~size_t(15)) * 2);
    r->written = nullptr;
    r->race = nullptr;
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


// --- the sanitizer: initcheck, racecheck, memcheck on every simulated access -----------------------------------
// The learner's code is compiled with -fsanitize-coverage=trace-loads,trace-stores: every load and store of it
// calls __sanitizer_cov_load<N>/store<N> below with the address. Inside a kernel (a fiber is running) the
// address is classified: a fiber's own stack (private, not checked), LDS (a static __shared__ variable, which
// simulate.py made known with lds_note, or the block's dynamic shared memory), a hipMalloc buffer, or other host
// memory (not checked). Findings are kept (one per kind and source line, counted) and printed at the end with
// their lines (llvm-symbolizer, HIPSIM_SYMBOLIZER); memcheck's out-of-bounds and use-after-free stop the program
// at once, as the access would fault on a GPU. HIPSIM_CHECKS=0 turns the checks off.
// One entry per 4-byte LDS word (a bank's width), with a bit per byte: two waves writing different bytes (or fp16
// halves) of one word do not race, and a half-word read of the half nothing wrote is caught.
struct Shadow {
    uint32_t wgen, rgen;     // the barrier interval of the last write, of the reads in rgen
    uint32_t igen;           // the block (its first barrier interval, gen0) in which imask's bytes were written
    uint16_t wwave, rwaves;  // the wave that wrote wmask; the waves that read rmask in rgen (a bit each, 16 waves)
    uint8_t wmask, rmask, imask, wlane;   // bytes of the word: written by wwave in wgen, read in rgen, written at all;
                                          // the lane of wwave that wrote it
    uintptr_t wpc, rpc;      // where (code addresses) the last write and a read of rgen were
};
static const long kStaticSpan = 256 * 1024;    // static LDS lies within this many bytes below the thread pointer
static const size_t kShadowEntries = kStaticSpan + kSharedBytes;
static int g_checks = -1;
// a static __shared__ variable: where it lies, its extents, its element type's name, and its pad (pad_lo == pad_hi:
// none; simulate.py declares one after each variable, and it counts only where it lies right after the variable)
struct LdsVar { long rel; size_t bytes; const char* name; int rank; unsigned dims[4]; long pad_lo, pad_hi; char elem[48]; };
static LdsVar g_lds[512];
static std::atomic<int> g_nlds{0};
static std::atomic<long> g_lds_lo{LONG_MAX}, g_lds_hi{LONG_MIN};
static std::mutex g_lds_mu;   // constant-initialised: a namespace-scope __shared__ is noted before main (lds_note_dims)
static std::vector<int>& g_sorted = *new std::vector<int>;   // allocations by address, rebuilt per launch

static inline uintptr_t thread_pointer() {
#if defined(__x86_64__)
    uintptr_t tp;
    asm volatile("mov %%fs:0, %0" : "=r"(tp));
    return tp;
#else
    return reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
#endif
}

static bool checks_on() {
    if (g_checks < 0) {
        const char* v = std::getenv("HIPSIM_CHECKS");
        g_checks = (v && std::strcmp(v, "0") == 0) ? 0 : 1;
    }
    return g_checks == 1;
}

// The program's static thread-local block, just below the thread pointer (x86-64): static LDS and the runtime's
// own thread-locals (blockIdx) lie there; its size is the program's PT_TLS segment, aligned.
static long g_tls_bytes = 0;
static int tls_cb(struct dl_phdr_info* info, size_t, void*) {
    for (int i = 0; i < info->dlpi_phnum; ++i)
        if (info->dlpi_phdr[i].p_type == PT_TLS) {
            const long align = std::max<long>(static_cast<long>(info->dlpi_phdr[i].p_align), 1);
            g_tls_bytes = (static_cast<long>(info->dlpi_phdr[i].p_memsz) + align - 1) / align * align;
        }
    return 1;   // the program itself is the first object
}

static void sanitizer_attach(Worker* w) {
    if (!g_tls_bytes) dl_iterate_phdr(tls_cb, nullptr);
    g_tls_bytes = std::min<long>(g_tls_bytes, kStaticSpan);
    w->tp = thread_pointer();
    w->dyn = static_cast<char*>(std::aligned_alloc(256, kSharedBytes));
    std::memset(w->dyn, 0, kSharedBytes);
    void* p = mmap(nullptr, kShadowEntries * sizeof(Shadow), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    w->shadow = p == MAP_FAILED ? nullptr : static_cast<Shadow*>(p);
}

// The element type in the note's function name ("... [T = P[64]]" -> "P"; "" if it cannot be told).
struct Range { uintptr_t lo, hi; };
static Range g_pads[512];       // the pads simulate.py declares (offsets from the thread pointer, as LdsVar's rel)
static int g_npads = 0;         // (under g_lds_mu)
static void note_elem(const char* type, char* out, size_t n) {
    out[0] = 0;
    const char* t = type ? std::strstr(type, "[T = ") : nullptr;
    if (!t) return;
    t += 5;
    const char* e = t;
    while (*e && *e != '[' && *e != ']' && *e != ';') ++e;
    while (e > t && e[-1] == ' ') --e;
    std::snprintf(out, n, "%.*s", static_cast<int>(e - t), t);
}

int lds_note_dims(const volatile void* p, size_t bytes, const char* name, const unsigned* dims, int rank,
                  const volatile void* pad, size_t pad_bytes, const char* type) {
    const uintptr_t tp = thread_pointer();
    const long rel = static_cast<long>(reinterpret_cast<uintptr_t>(p) - tp);
    if (rel < -kStaticSpan || rel + static_cast<long>(bytes) > 0) return 0;   // not where static LDS lies: unchecked
    std::lock_guard<std::mutex> g(g_lds_mu);
    const int n = g_nlds.load();
    for (int i = 0; i < n; ++i) if (g_lds[i].rel == rel) return 0;
    if (n >= 512) return 0;
    g_lds[n] = LdsVar{rel, bytes, name, std::min(rank, 4), {0, 0, 0, 0}, 0, 0, ""};
    for (int k = 0; k < g_lds[n].rank; ++k) g_lds[n].dims[k] = dims[k];
    note_elem(type, g_lds[n].elem, sizeof g_lds[n].elem);
    // the pads: a variable's pad is the one that starts where it ends (simulate.py declares `__shared__ float a[16],
    // b[16];` as two declarations, each followed by its pad)
    const long pad_rel = pad ? static_cast<long>(reinterpret_cast<uintptr_t>(pad) - tp) : 1;
    if (pad_rel <= -static_cast<long>(pad_bytes) && g_npads < 512) g_pads[g_npads++] = Range{static_cast<uintptr_t>(pad_rel),
                                                                           static_cast<uintptr_t>(pad_rel + static_cast<long>(pad_bytes))};
    long hi = g_lds_hi.load();
    for (int i = 0; i <= n; ++i)
        for (int j = 0; j < g_npads && g_lds[i].pad_lo == g_lds[i].pad_hi; ++j)
            if (static_cast<long>(g_pads[j].lo) == g_lds[i].rel + static_cast<long>(g_lds[i].bytes)) {
                g_lds[i].pad_lo = static_cast<long>(g_pads[j].lo);
                g_lds[i].pad_hi = static_cast<long>(g_pads[j].hi);
                hi = std::max(hi, g_lds[i].pad_hi);
            }
    g_lds_hi.store(std::max(hi, rel + static_cast<long>(bytes)));
    g_nlds.store(n + 1);
    if (rel < g_lds_lo.load()) g_lds_lo.store(rel);
    return 0;
}

static std::atomic<uint64_t> g_epoch{0};      // the launch now running (racecheck between blocks)
static std::atomic<uint32_t> g_launch_tag{1};  // its 8-bit number in racecheck's tags (global_race)
static std::vector<uint8_t>& g_fenced = *new std::vector<uint8_t>;   // per block of this launch: it fenced
static bool fenced(size_t block_tag) {   // block_tag ran a __threadfence() in this launch
    return g_fenced.size() > block_tag && __atomic_load_n(&g_fenced[block_tag], __ATOMIC_RELAXED);
}
static bool counters_on();
static int g_plain = 0;   // 1: checks and counters off (set per launch): a load with no store before it does nothing
static void sanitizer_launch(const LaunchSpec& s) {
    // racecheck's tags name a launch in 8 bits (1..255): when the count wraps, every tag of an earlier launch is
    // cleared (the pages given back: zero again on the next touch), so none is taken for this launch's
    const uint64_t epoch = g_epoch.fetch_add(1) + 1;
    g_launch_tag.store(static_cast<uint32_t>((epoch - 1) % 255 + 1), std::memory_order_relaxed);
    if (epoch % 255 == 0 && checks_on()) {
        std::lock_guard<std::mutex> g(g_alloc_mu);
        for (int i = 0; i < g_nallocs.load(); ++i)
            if (g_allocs[i].live && g_allocs[i].race)
                madvise(g_allocs[i].race, ((g_allocs[i].bytes + 15) & ~size_t(15)) * 2, MADV_DONTNEED);
    }
    const size_t blocks = static_cast<size_t>(s.grid.x) * s.grid.y * s.grid.z;
    g_fenced.assign(checks_on() ? std::min<size_t>(blocks, size_t(1) << 20) : 0, 0);   // per block tag (global_race)
    g_plain = !checks_on() && !counters_on();
    std::lock_guard<std::mutex> g(g_alloc_mu);
    g_sorted.clear();
    for (int i = 0; i < g_nallocs.load(); ++i) if (g_allocs[i].map_lo) g_sorted.push_back(i);
    std::sort(g_sorted.begin(), g_sorted.end(), [](int a, int b) { return g_allocs[a].map_lo < g_allocs[b].map_lo; });
}

// most accesses hit one of the few buffers the last ones hit (a kernel's inputs and output): those are looked at
// first, most recent first, before a search of every buffer (forgotten after a hipFree: its addresses may be reused)
static thread_local Alloc* t_recent[4] = {nullptr, nullptr, nullptr, nullptr};
static thread_local unsigned t_recent_frees = 0;
static Alloc* lookup(uintptr_t a) {
    const unsigned frees = g_frees.load(std::memory_order_relaxed);
    if (frees != t_recent_frees) { t_recent_frees = frees; t_recent[0] = t_recent[1] = t_recent[2] = t_recent[3] = nullptr; }
    for (int i = 0; i < 4; ++i) {
        Alloc* c = t_recent[i];
        if (c && a >= c->map_lo && a < c->map_hi) {
            if (i) { std::memmove(&t_recent[1], &t_recent[0], i * sizeof(Alloc*)); t_recent[0] = c; }
            return c;
        }
    }
    size_t lo = 0, hi = g_sorted.size();
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        Alloc& r = g_allocs[g_sorted[mid]];
        if (a < r.map_lo) hi = mid;
        else if (a >= r.map_hi) lo = mid + 1;
        else {
            std::memmove(&t_recent[1], &t_recent[0], 3 * sizeof(Alloc*));
            return t_recent[0] = &r;
        }
    }
    return nullptr;
}

// --- findings ---
enum Tool { INITCHECK, RACECHECK, MEMCHECK, SYNCCHECK };
static const char* kToolName[] = {"initcheck", "racecheck", "memcheck", "synccheck"};
struct Finding { int tool; uintptr_t pc, other; long count; std::string text; int line = 0; };
static std::mutex& g_find_mu = *new std::mutex;
static std::vector<Finding>& g_findings = *new std::vector<Finding>;
static const size_t kMaxFindings = 24;

// False (and counted) when this thread already reported this finding: the caller then formats nothing.
static bool fresh(Worker* w, int tool, uintptr_t pc) {
    for (int i = 0; i < w->nseen; ++i)
        if (w->seen_pc[i] == pc && w->seen_tool[i] == tool) { ++w->seen_count[i]; return false; }
    if (w->nseen < 32) {
        w->seen_tool[w->nseen] = tool;
        w->seen_pc[w->nseen] = pc;
        w->seen_count[w->nseen++] = 0;
    }
    return true;
}

static void where_text(Worker* w, Fiber* f, char* out, size_t n) {
    char b[64];
    block_name(w, b, sizeof b);
    std::snprintf(out, n, "thread (%u,%u,%u) (lane %u of wavefront %u) of block %s of kernel %s (launched at line %d)",
                  f->coords.idx.x, f->coords.idx.y, f->coords.idx.z, f->coords.linear % kWave, f->coords.linear / kWave,
                  b, w->spec ? w->spec->kernel : "?", w->spec ? w->spec->line : 0);
}

static std::vector<int> source_lines(const std::vector<uintptr_t>& pcs);
// A finding, the first time this code address reports it: its source lines looked up now and the line written on
// the simulator's channel at once (so _exit, a crash or a closed stderr cannot lose it). Recurrences are counted
// and summed up at the end.
static void record(int tool, uintptr_t pc, uintptr_t other, const char* fmt, ...) {
    std::lock_guard<std::mutex> g(g_find_mu);
    for (Finding& f : g_findings)
        if (f.tool == tool && f.pc == pc) { ++f.count; return; }
    if (g_findings.size() >= kMaxFindings) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    g_findings.push_back(Finding{tool, pc, other, 1, buf});
    std::vector<int> lines = source_lines({pc, other});
    char line[32] = "line ?", oth[64] = "";
    if (lines[0]) std::snprintf(line, sizeof line, "line %d", lines[0]);
    if (other && lines[1]) std::snprintf(oth, sizeof oth, " (the other access: line %d)", lines[1]);
    g_findings.back().line = lines[0];
    emit("%s: %s: %s%s", kToolName[tool], line, buf, oth);
}

static uintptr_t g_load_base = 0;
static int base_cb(struct dl_phdr_info* info, size_t, void*) { g_load_base = info->dlpi_addr; return 1; }

// The learner's source line of each code address (llvm-symbolizer on this program; 0 where unknown).
static std::vector<int> source_lines(const std::vector<uintptr_t>& pcs) {
    std::vector<int> lines(pcs.size(), 0);
    const char* tool = std::getenv("HIPSIM_SYMBOLIZER");
    if (!tool || !*tool || pcs.empty()) return lines;
    dl_iterate_phdr(base_cb, nullptr);
    char obj[64];
    std::snprintf(obj, sizeof obj, " --obj=/proc/%d/exe --functions=none", static_cast<int>(getpid()));
    std::string cmd = std::string(tool) + obj;
    for (uintptr_t pc : pcs) {
        char a[32];
        std::snprintf(a, sizeof a, " 0x%llx", static_cast<unsigned long long>(pc ? pc - 1 - g_load_base : 0));
        cmd += a;
    }
    cmd += " 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return lines;
    char buf[4096];
    size_t k = 0;
    bool have = false;
    while (std::fgets(buf, sizeof buf, p) && k < pcs.size()) {
        if (buf[0] == '\n') { ++k; have = false; continue; }
        if (have) continue;
        // file:line:col; the first frame in the learner's file (not a system or simulator header)
        std::string s(buf);
        if (s.find("/usr/") == 0 || s.find("hip_runtime") != std::string::npos || s.find("/include/") != std::string::npos)
            continue;
        size_t c2 = s.rfind(':'), c1 = c2 == std::string::npos ? c2 : s.rfind(':', c2 - 1);
        if (c1 == std::string::npos) continue;
        lines[k] = std::atoi(s.c_str() + c1 + 1);
        have = lines[k] > 0;
    }
    pclose(p);
    return lines;
}

// At the end (or a stop): how often each finding recurred after its first report.
static void flush_findings() {
    std::vector<Finding> found;
    {
        std::lock_guard<std::mutex> g(g_find_mu);
        found = g_findings;
        for (Finding& f : g_findings) f.count = 0;
    }
    for (Finding& f : found)         // what each thread counted without reporting again
        for (Worker* w : g_workers)
            for (int i = 0; i < w->nseen; ++i)
                if (w->seen_pc[i] == f.pc && w->seen_tool[i] == f.tool) { f.count += w->seen_count[i]; w->seen_count[i] = 0; }
    for (const Finding& f : found)
        if (f.count > 1)
            emit("sanitizer: the %s finding at line %d occurred %ld times in all", kToolName[f.tool], f.line, f.count);
}

[[noreturn]] static void stop_here() {
    flush_findings();
    emit("error: memcheck stopped the program at this access (on a GPU it reads or writes memory that is not the "
         "buffer's)");
    _exit(kExitCode);
}

static void lds_access(Worker* w, Fiber* f, size_t idx, int size, bool write, uintptr_t pc, const char* name,
                       long offset, bool atomic = false) {
    Shadow* sh = w->shadow;
    if (!sh || idx + size > kShadowEntries) return;
    const size_t first = idx / 4, last = (idx + size - 1) / 4;
    offset -= static_cast<long>(idx % 4);
    const uint16_t wave = static_cast<uint16_t>(f->coords.linear / kWave);
    const uint16_t bit = static_cast<uint16_t>(1u << (wave & 15));
    const uint32_t gen = w->gen, gen0 = w->gen0;
    bool told = false;     // one finding per access (not one per byte)
    char where[256];
    for (size_t word = first; word <= last; ++word) {
        Shadow& e = sh[word];
        const long k = 4 * static_cast<long>(word - first);
        const long lo = std::max<long>(static_cast<long>(idx) - static_cast<long>(word * 4), 0);
        const long hi = std::min<long>(static_cast<long>(idx + size) - static_cast<long>(word * 4), 4);
        const uint8_t m = static_cast<uint8_t>(((1u << hi) - 1) & ~((1u << lo) - 1));
        const uint8_t written = e.igen == gen0 ? e.imask : 0;
        if (atomic) {      // an atomic reads the word first: initcheck; atomics of different waves never race
            if (!told && (written & m) != m) {
                told = true;
                if (fresh(w, INITCHECK, pc)) {
                    where_text(w, f, where, sizeof where);
                    record(INITCHECK, pc, 0, "%s applies an atomic to LDS %s (byte %ld) before any thread of this "
                           "block wrote it: the atomic reads whatever an earlier block or kernel left there. Set it "
                           "(e.g. to 0) before a __syncthreads() that comes before the atomics", where, name,
                           offset + k + lo);
                }
            }
            e.igen = gen0;
            e.imask = static_cast<uint8_t>(written | m);
            continue;
        }
        const bool w_other = e.wgen == gen && e.wwave != wave && (e.wmask & m);
        const uint8_t lane = static_cast<uint8_t>(f->coords.linear % kWave);
        if (write) {
            if (!told && e.wgen == gen && e.wwave == wave && e.wlane != lane && (e.wmask & m)) {
                told = true;     // two lanes of one wavefront store to the same bytes: one store is lost
                if (fresh(w, RACECHECK, pc)) {
                    where_text(w, f, where, sizeof where);
                    record(RACECHECK, pc, e.wpc, "%s writes LDS %s (byte %ld), which lane %u of the same wavefront "
                           "also wrote with no barrier between: a race in HIP's memory model that the hardware does "
                           "not hide: the lanes of a wavefront store together, so one lane's value wins and the "
                           "others are lost (a non-atomic += from many lanes loses updates). Use an atomic (atomicAdd) "
                           "or a reduction", where, name, offset + k + lo, e.wlane);
                }
            } else if (!told && w_other) {
                told = true;
                if (fresh(w, RACECHECK, pc)) {
                    where_text(w, f, where, sizeof where);
                    record(RACECHECK, pc, e.wpc, "%s writes LDS %s (byte %ld), which wave %u also wrote with no "
                           "__syncthreads() between: which write lands last differs from run to run on a GPU. Put a "
                           "barrier between the two", where, name, offset + k + lo, e.wwave);
                }
            } else if (!told && e.rgen == gen && (e.rwaves & ~bit) && (e.rmask & m)) {
                told = true;
                if (fresh(w, RACECHECK, pc)) {
                    where_text(w, f, where, sizeof where);
                    record(RACECHECK, pc, e.rpc, "%s writes LDS %s (byte %ld), which another wave reads with no "
                           "__syncthreads() between (a write-after-read hazard): the reader may see the new value or "
                           "the old. Put a barrier between the read and this write", where, name, offset + k + lo);
                }
            }
            e.wmask = static_cast<uint8_t>(e.wgen == gen && e.wwave == wave ? (e.wmask | m) : m);
            e.wgen = gen;
            e.wwave = wave;
            e.wlane = lane;
            e.wpc = pc;
            e.igen = gen0;
            e.imask = static_cast<uint8_t>(written | m);
            continue;
        }
        if (!told && (written & m) != m) {
            told = true;
            if (fresh(w, INITCHECK, pc)) {
                where_text(w, f, where, sizeof where);
                int b = 0;
                while (b < 4 && (!((m >> b) & 1) || ((written >> b) & 1))) ++b;
                record(INITCHECK, pc, 0, "%s reads LDS %s (byte %ld) before any thread of this block wrote it: on a GPU "
                       "it holds whatever an earlier block or kernel left there, so the result can be right or wrong "
                       "from run to run. Write it before a __syncthreads() that comes before this read", where, name,
                       offset + k + b);
            }
        } else if (!told && w_other) {
            told = true;
            if (fresh(w, RACECHECK, pc)) {
                where_text(w, f, where, sizeof where);
                record(RACECHECK, pc, e.wpc, "%s reads LDS %s (byte %ld), which wave %u wrote with no __syncthreads() "
                       "between (a read-after-write hazard): on a GPU the other wave may not have written it yet. "
                       "Put a barrier between the write and this read", where, name, offset + k + lo, e.wwave);
            }
        }
        if (e.rgen != gen) { e.rgen = gen; e.rwaves = 0; e.rmask = 0; }
        e.rwaves |= bit;
        e.rmask = static_cast<uint8_t>(e.rmask | m);
        e.rpc = pc;
    }
}

// Racecheck between blocks (global memory): per 4-byte word one 64-bit entry, the tag of the last write (low half)
// and one of the reads since (high half), each (launch << 24 | block << 4 | the bytes of the word it touched), in
// 32 bits: 8 for the launch (1..255, cleared when the count wraps: sanitizer_launch), 20 for the block (blocks
// 2^20 apart share a tag: a race between them is missed, never invented). Within one launch, a plain write and
// another block's plain write or read of the same bytes, with no grid-wide ordering, is a race: blocks run in any
// order, at once or one after another. A __threadfence() by the writing block (the "last block" pattern: write,
// fence, atomic counter) orders its writes before what other blocks read after it. Atomics are not plain accesses.
static const uint32_t kManyBlocks = 0xfffff;
static inline uint32_t tag_launch(uint32_t t) { return t >> 24; }
static inline uint32_t tag_block(uint32_t t) { return (t >> 4) & 0xfffff; }
static inline unsigned tag_bytes(uint32_t t) { return t & 0xf; }
static inline uint32_t tag_of(uint32_t launch, uint32_t block, unsigned bytes) { return launch << 24 | block << 4 | bytes; }
// Racecheck between the wavefronts of one block (global memory): two wavefronts of a block that access one byte, one
// of them writing, with no barrier between (HIP's memory model: a block's wavefronts run in any order between
// barriers). Each CPU thread keeps, for the global words its block touched in the barrier interval now running, which
// bytes each of its (at most 16) wavefronts wrote and read: a small table, open addressing, its entries of earlier
// intervals (gen, w->gen: barriers and blocks) free. A word that finds no free entry within a few probes is not
// tracked in this interval, and once half the table is taken the interval is not tracked further (a long loop
// without a barrier: a race missed, never invented; each access then costs one test). Atomics are not plain accesses.
struct WaveWord { uintptr_t word; uint32_t gen; uint32_t pad; uint64_t wrote, read; };   // 4 bits per wavefront
static const size_t kWaveWords = 1 << 13;
static const int kWaveProbes = 8;
static const char* wave_race(Worker* w, Fiber* f, uintptr_t word, unsigned bytes, bool write) {
    if (w->nthreads <= kWave) return nullptr;         // one wavefront: lockstep lanes, no other wavefront
    if (!w->words) {
        void* p = mmap(nullptr, kWaveWords * sizeof(WaveWord), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) return nullptr;
        w->words = static_cast<WaveWord*>(p);
    }
    if (w->words_gen != w->gen) {
        w->words_gen = w->gen;
        w->words_used = 0;
    }
    if (w->words_used >= static_cast<int>(kWaveWords / 2)) return nullptr;
    const unsigned wave = f->coords.linear / kWave;
    const uint64_t mine = static_cast<uint64_t>(bytes) << (4 * wave);
    const uint64_t each = static_cast<uint64_t>(bytes) * 0x1111111111111111ull;   // these bytes, in every wavefront
    const uint64_t others = ~(0xfull << (4 * wave));
    // 64 consecutive words fill one run of 64 entries (sequential lanes touch neighbouring entries), runs scattered
    size_t h = (((word >> 6) * 0x9e3779b97f4a7c15ull >> 40) ^ word) & (kWaveWords - 1);
    for (int k = 0; k < kWaveProbes; ++k, h = (h + 1) & (kWaveWords - 1)) {
        WaveWord& e = w->words[h];
        if (e.gen != w->gen) {                         // free in this interval: this word's first access in it
            e = WaveWord{word, w->gen, 0, write ? mine : 0, write ? 0 : mine};
            ++w->words_used;
            return nullptr;
        }
        if (e.word != word) continue;
        const char* kind = nullptr;
        if (e.wrote & others & each) kind = write ? "which another wavefront of this block also writes"
                                                  : "which another wavefront of this block writes";
        else if (write && (e.read & others & each)) kind = "which another wavefront of this block reads";
        (write ? e.wrote : e.read) |= mine;
        return kind;
    }
    return nullptr;
}

static void global_race(Worker* w, Fiber* f, Alloc* r, uintptr_t a, int size, bool write, uintptr_t pc) {
    const uint32_t launch = g_launch_tag.load(std::memory_order_relaxed);
    const long blk = w->block_linear.load(std::memory_order_relaxed);
    const uint32_t block = static_cast<uint32_t>(blk) & 0xfffff;
    const uintptr_t off = a - r->start;
    char where[256];
    for (uintptr_t word = off / 4; word <= (off + size - 1) / 4; ++word) {
        const long lo = std::max<long>(static_cast<long>(off) - static_cast<long>(word * 4), 0);
        const long hi = std::min<long>(static_cast<long>(off + size) - static_cast<long>(word * 4), 4);
        const unsigned bytes = ((1u << hi) - 1) & ~((1u << lo) - 1);
        uint64_t* e = r->race + word;
        const uint64_t old = __atomic_load_n(e, __ATOMIC_RELAXED);
        const uint32_t wt = static_cast<uint32_t>(old), rt = static_cast<uint32_t>(old >> 32);
        const bool w_now = tag_launch(wt) == launch, r_now = tag_launch(rt) == launch;
        const uint32_t wb = tag_block(wt);
        const char* kind = nullptr;
        if (w_now && wb != block && (tag_bytes(wt) & bytes)) {
            // the writer's block number, in full, for its fence (blocks of one tag: the running block's is the one)
            if (write || !fenced(wb)) kind = write ? "which another block also writes" : "which another block writes";
        } else if (write && r_now && tag_block(rt) != block && (tag_bytes(rt) & bytes)) {
            kind = "which another block reads";
        }
        const char* in_block = wave_race(w, f, (r->start >> 2) + word, bytes, write);
        if (!kind && in_block) {
            // a __threadfence() of the block orders its writes before its later reads (a flag handshake)
            if ((write || !fenced(block)) && fresh(w, RACECHECK, pc)) {
                where_text(w, f, where, sizeof where);
                record(RACECHECK, pc, 0, "%s %s byte %lld of a hipMalloc buffer of %zu bytes, %s with no "
                       "__syncthreads() between them (a race between wavefronts: the wavefronts of a block run in any "
                       "order between barriers, so the result depends on which runs first). Put a __syncthreads() "
                       "between the write and the other wavefront's access, or use an atomic",
                       where, write ? "writes" : "reads", static_cast<long long>(word * 4 + lo), r->bytes, in_block);
            }
        }
        if (kind && fresh(w, RACECHECK, pc)) {
            where_text(w, f, where, sizeof where);
            record(RACECHECK, pc, 0, "%s %s byte %lld of a hipMalloc buffer of %zu bytes, %s "
                   "in the same launch with no grid-wide ordering (a race between blocks: blocks run in any order, "
                   "so the result depends on which runs first, and a non-atomic += loses updates). Use an atomic "
                   "(atomicAdd), give each block its own slot, or finish the work in a second kernel",
                   where, write ? "writes" : "reads", static_cast<long long>(word * 4 + lo), r->bytes, kind);
        }
        uint32_t nw = wt, nr = rt;
        if (write) {
            nw = tag_of(launch, block, (w_now && wb == block ? tag_bytes(wt) : 0) | bytes);
        } else {
            const uint32_t rb = r_now ? (tag_block(rt) == block ? block : kManyBlocks) : block;
            nr = tag_of(launch, rb, (r_now ? tag_bytes(rt) : 0) | bytes);
        }
        const uint64_t now = static_cast<uint64_t>(nr) << 32 | nw;
        if (now != old) __atomic_store_n(e, now, __ATOMIC_RELAXED);   // a re-read by the same block writes nothing
    }
}

// Memory a GPU cannot reach: a kernel's access to host memory that no hipMalloc, hipHostMalloc or hipMallocManaged
// returned (malloc/new, a host array, the host's stack) faults on MI300X (pageable memory is not mapped for the GPU,
// XNACK off): the simulator stops there, as the GPU would. Device-accessible besides the allocations: the fiber's
// own stack, LDS, the program's and libraries' loaded images (__device__ and __constant__ variables), the running
// block's and thread's coordinates, and the launch's copy of the kernel's arguments.
static std::vector<Range>& g_images = *new std::vector<Range>;
static int image_cb(struct dl_phdr_info* info, size_t, void*) {
    for (int i = 0; i < info->dlpi_phnum; ++i)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            const uintptr_t lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            g_images.push_back(Range{lo, lo + info->dlpi_phdr[i].p_memsz});
        }
    return 0;
}
static bool in_image(uintptr_t a) {
    for (const Range& r : g_images) if (a >= r.lo && a < r.hi) return true;
    return false;
}
static void host_access(Worker* w, Fiber* f, uintptr_t a, int size, bool write, uintptr_t pc) {
    if (a - t_state_lo < t_state_hi - t_state_lo) return;
    const uintptr_t fibers = reinterpret_cast<uintptr_t>(w->fibers.data());
    if (a - fibers < w->fibers.size() * sizeof(Fiber)) return;      // threadIdx and the like
    if (a - (w->tp - g_tls_bytes) < static_cast<uintptr_t>(g_tls_bytes) + 64) return;   // the thread's TLS
    if (a < 65536) return;                    // a null pointer: the fault handler names it
    if (in_image(a)) return;
    {
        std::lock_guard<std::mutex> g(g_alloc_mu);    // images loaded since (dlopen): looked at again once
        static size_t seen = 0;
        if (g_images.size() != seen || g_images.empty()) { g_images.clear(); dl_iterate_phdr(image_cb, nullptr); seen = g_images.size(); }
    }
    if (in_image(a)) return;
    // Not mapped in this process at all (far past a buffer, a wild pointer): it is no host memory either, so the
    // access itself faults and the fault handler names it ("in no hipMalloc buffer: far out of bounds").
    if (msync(reinterpret_cast<void*>(a & ~static_cast<uintptr_t>(4095)), 1, MS_ASYNC) != 0 && errno == ENOMEM) return;
    char where[256];
    where_text(w, f, where, sizeof where);
    record(MEMCHECK, pc, 0, "%s %s %d bytes at %p, host memory the GPU cannot reach (not from hipMalloc, hipHostMalloc "
           "or hipMallocManaged: a malloc/new buffer, a host array or a host variable given to the kernel). On MI300X "
           "this access faults (Memory access fault by GPU: the kernel is killed). Copy the data into a hipMalloc "
           "buffer and pass that", where, write ? "writes" : "reads", size, reinterpret_cast<void*>(a));
    stop_here();
}

void device_pointer(const volatile void* p, const char* api, const char* what) {
    if (!checks_on() || !p) return;
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    {
        std::lock_guard<std::mutex> g(g_alloc_mu);
        Alloc* r = find_alloc(const_cast<const void*>(p));
        if (r && r->live) return;
        if (g_images.empty()) dl_iterate_phdr(image_cb, nullptr);
    }
    if (in_image(a)) return;
    init_once();
    record(MEMCHECK, reinterpret_cast<uintptr_t>(__builtin_return_address(0)), 0, "%s was given %s = %p, host memory "
           "the GPU cannot reach (not from hipMalloc, hipHostMalloc or hipMallocManaged): on MI300X the library's "
           "kernel faults on it (Memory access fault by GPU). Pass device pointers (hipMalloc, then hipMemcpy)", api,
           what, const_cast<void*>(p));
    stop_here();
}

void narrowed(const char* what) {
    Worker* w = t_worker;
    Fiber* f = w ? w->cur.load(std::memory_order_relaxed) : nullptr;
    const uintptr_t pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
    if (!checks_on() || (w && !fresh(w, SYNCCHECK, pc))) return;
    char where[256] = "host code";
    if (f) where_text(w, f, where, sizeof where);
    record(SYNCCHECK, pc, 0, "%s gives %s a 64-bit value with bits set in its upper half: it counts 32 bits, so "
           "lanes 32-63 of a __ballot are lost on a wavefront of 64 (MI300X counts the same wrong number). Use "
           "__popcll or __builtin_popcountll on the unsigned long long", where, what);
}

void fence_note() {
    Worker* w = t_worker;
    if (!w || !w->cur.load(std::memory_order_relaxed)) return;
    const long b = w->block_linear.load(std::memory_order_relaxed);
    const size_t tag = static_cast<size_t>(b) & 0xfffff;      // blocks of one tag share it: a race missed, never invented
    if (b >= 0 && tag < g_fenced.size()) __atomic_store_n(&g_fenced[tag], 1, __ATOMIC_RELAXED);
}

static void host_access(Worker* w, Fiber* f, uintptr_t a, int size, bool write, uintptr_t pc);
static void global_access(Worker* w, Fiber* f, uintptr_t a, int size, bool write, uintptr_t pc, bool atomic = false) {
    Alloc* r = lookup(a);
    if (!r) { host_access(w, f, a, size, write || atomic, pc); return; }
    char where[256];
    if (!r->live) {
        if (fresh(w, MEMCHECK, pc)) {
            where_text(w, f, where, sizeof where);
            record(MEMCHECK, pc, 0, "%s %s %d bytes at %p in a buffer that hipFree already released (a use after free)",
                   where, write ? "writes" : "reads", size, reinterpret_cast<void*>(a));
        }
        stop_here();
    }
    if (a < r->start || a + size > r->end) {
        where_text(w, f, where, sizeof where);
        const long long off = static_cast<long long>(a) - static_cast<long long>(r->start);
        record(MEMCHECK, pc, 0, "%s %s %d bytes at byte %lld of a hipMalloc buffer of %zu bytes: out of bounds (%s). "
               "Guard the access with the size (if (i < n))", where, write ? "writes" : "reads", size, off, r->bytes,
               off < 0 ? "before its start" : "past its end");
        stop_here();
    }
    if (a & static_cast<uintptr_t>((size < 4 ? size : 4) - 1)) {     // sizes are powers of two, or 12 (a multiple of 4)
        if (fresh(w, MEMCHECK, pc)) {
            where_text(w, f, where, sizeof where);
            record(MEMCHECK, pc, 0, "%s %s %d bytes at %p, which is not aligned to %d bytes (a misaligned address: "
                   "a cast of a pointer into the middle of an element?)", where, write ? "writes" : "reads", size,
                   reinterpret_cast<void*>(a), size < 4 ? size : 4);
        }
    }
    if (r->race && !atomic) global_race(w, f, r, a, size, write, pc);
    if (!r->written) return;
    uint8_t* m = r->written + (a - r->start);
    if (write && !atomic) { std::memset(m, 1, size); return; }
    const uint64_t ones = 0x0101010101010101ull;     // the common case: every byte written, one load per 8 bytes
    if (size == 4) {
        uint32_t v;
        std::memcpy(&v, m, 4);
        if (v == static_cast<uint32_t>(ones)) return;
    } else if (size == 8 || size == 16) {
        uint64_t v[2] = {ones, ones};
        std::memcpy(&v[0], m, 8);
        if (size == 16) std::memcpy(&v[1], m + 8, 8);
        if (v[0] == ones && v[1] == ones) return;
    }
    for (int k = 0; k < size; ++k)     // a read, or an atomic (it reads the old value first)
        if (!m[k]) {
            if (fresh(w, INITCHECK, pc)) {
                where_text(w, f, where, sizeof where);
                record(INITCHECK, pc, 0, "%s %s byte %lld of a hipMalloc buffer of %zu bytes that nothing wrote (no "
                       "hipMemcpy, hipMemset or kernel store reached it): on a GPU it holds leftovers. Copy or set the "
                       "buffer before a kernel reads it", where, atomic ? "applies an atomic to" : "reads",
                       static_cast<long long>(a - r->start + k), r->bytes);
            }
            break;
        }
    if (atomic) std::memset(m, 1, size);
}

// --- counters (HIPSIM_COUNTERS=1): what gfx942's counters count, from the same trace --------------------------------
// The lanes of a wavefront run one after another between meeting points; the k-th time each lane reaches one
// load or store (code address) is one wave instruction. At each meeting point (and the block's end) every such
// instruction is counted: an LDS one as SQ_INSTS_LDS, with SQ_LDS_BANK_CONFLICT = for each half-wave (32 lanes,
// 32 banks of 4 bytes on gfx942) the most distinct words one bank must serve, less the passes the words need;
// a global one as SQ_INSTS_VMEM_RD / _WR, with TCP_TOTAL_CACHE_ACCESSES_sum = the distinct 128-byte lines its
// lanes touch, and its bytes and active lanes. Counted by the simulator from the host build's loads and stores:
// never measured hardware.
enum { C_WAVES, C_VMEM_RD, C_VMEM_WR, C_TCP_LINES, C_LDS_INSTS, C_LDS_CONFLICT, C_LDS_ACTIVE, C_BYTES_RD, C_BYTES_WR,
       C_LANES_MEM, C_N };
static const char* kCounterName[C_N] = {"SQ_WAVES", "SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR",
                                        "TCP_TOTAL_CACHE_ACCESSES_sum", "SQ_INSTS_LDS", "SQ_LDS_BANK_CONFLICT",
                                        "SQ_LDS_IDX_ACTIVE", "bytes_read", "bytes_written", "active_lanes"};
struct Group { uintptr_t pc; int occ; bool lds, write; int size; uint64_t lanes; uintptr_t addr[64]; };
struct Counting {
    std::vector<Group> groups[kMaxThreads / kWave];
    std::vector<std::pair<uintptr_t, int>> seen[kMaxThreads];   // per lane: how often it reached each address
    long long totals[C_N] = {0};
    uint64_t lds_used[512 / 64] = {0};   // the static LDS variables (g_lds) this launch's threads touched
};
// A kernel's resources as its launches used them (the largest of its launches): threads per workgroup, the static
// LDS variables its threads touched (their bytes summed: a compiler packs a kernel's LDS variables one after another)
// and the launch's dynamic shared memory. With the gfx942 compiler's registers they give waves per SIMD
// (rocmlab/hip/sim/launch_occupancy.py).
struct KernelCounts { std::string kernel; int line; long launches; long long c[C_N];
                      long workgroup = 0, lds_static = 0, lds_dynamic = 0; };
static int g_counters = -1;
static std::mutex& g_count_mu = *new std::mutex;
static std::vector<KernelCounts>& g_kernel_counts = *new std::vector<KernelCounts>;

static bool counters_on() {
    if (g_counters < 0) {
        const char* v = std::getenv("HIPSIM_COUNTERS");
        g_counters = (v && std::strcmp(v, "1") == 0) ? 1 : 0;
    }
    return g_counters == 1;
}

static void count_access(Worker* w, Fiber* f, uintptr_t addr, int size, bool write, uintptr_t pc, bool lds) {
    if (!w->counting) w->counting = new Counting();
    Counting& c = *w->counting;
    const unsigned t = f->coords.linear;
    int occ = 0;
    auto& seen = c.seen[t];
    bool found = false;
    for (auto& p : seen)
        if (p.first == pc) { occ = ++p.second; found = true; break; }
    if (!found) seen.emplace_back(pc, 0);
    auto& groups = c.groups[t / kWave];
    Group* g = nullptr;
    for (auto& x : groups)
        if (x.pc == pc && x.occ == occ) { g = &x; break; }
    if (!g) {
        groups.push_back(Group{pc, occ, lds, write, size, 0, {0}});
        g = &groups.back();
    }
    g->lanes |= 1ull << (t % kWave);
    g->addr[t % kWave] = addr;
}

static void count_group(Counting& c, const Group& g) {
    const int lanes = __builtin_popcountll(g.lanes);
    if (!lanes) return;
    if (g.lds) {
        c.totals[C_LDS_INSTS] += 1;
        const int words_per_lane = (g.size + 3) / 4;
        for (int half = 0; half < 2; ++half) {
            std::vector<uintptr_t> words;
            for (int l = half * 32; l < half * 32 + 32; ++l)
                if ((g.lanes >> l) & 1)
                    for (int k = 0; k < words_per_lane; ++k) words.push_back(g.addr[l] / 4 + k);
            if (words.empty()) continue;
            std::sort(words.begin(), words.end());
            words.erase(std::unique(words.begin(), words.end()), words.end());   // one address: a broadcast
            int per_bank[32] = {0}, most = 0;
            for (uintptr_t wd : words) most = std::max(most, ++per_bank[wd % 32]);
            const int passes = static_cast<int>((words.size() + 31) / 32);
            c.totals[C_LDS_CONFLICT] += most - passes > 0 ? most - passes : 0;
            c.totals[C_LDS_ACTIVE] += most > passes ? most : passes;
        }
        return;
    }
    c.totals[g.write ? C_VMEM_WR : C_VMEM_RD] += 1;
    c.totals[g.write ? C_BYTES_WR : C_BYTES_RD] += static_cast<long long>(lanes) * g.size;
    c.totals[C_LANES_MEM] += lanes;
    std::vector<uintptr_t> lines;
    for (int l = 0; l < 64; ++l)
        if ((g.lanes >> l) & 1) { lines.push_back(g.addr[l] / 128); lines.push_back((g.addr[l] + g.size - 1) / 128); }
    std::sort(lines.begin(), lines.end());
    c.totals[C_TCP_LINES] += std::unique(lines.begin(), lines.end()) - lines.begin();
}

// HIPSIM_TRACE=1 (with the counters): the first wave instructions of wavefront 0 of block (0,0,0), lane by lane,
// printed at the end with their source lines (the notebook's view of one instruction's accesses).
static const size_t kTraceGroups = 256;
static std::mutex& g_trace_mu = *new std::mutex;
static std::vector<Group>& g_trace = *new std::vector<Group>;
static int g_tracing = -1;
static bool tracing() {
    if (g_tracing < 0) {
        const char* v = std::getenv("HIPSIM_TRACE");
        g_tracing = (v && std::strcmp(v, "1") == 0) ? 1 : 0;
    }
    return g_tracing == 1;
}

// Every lane of a wavefront stands at a meeting point or is done: count its wave instructions since the last one.
static void counters_settle(Worker* w, int wave, int base, int end) {
    Counting* c = w->counting;
    if (!c) return;
    if (tracing() && wave == 0 && w->block_linear.load() == 0 && !c->groups[0].empty()) {
        std::lock_guard<std::mutex> g(g_trace_mu);
        for (const Group& x : c->groups[0]) if (g_trace.size() < kTraceGroups) g_trace.push_back(x);
    }
    for (const Group& g : c->groups[wave]) count_group(*c, g);
    c->groups[wave].clear();
    for (int i = base; i < end; ++i) c->seen[i].clear();
}

static void counters_block_start(Worker* w, int n) {
    if (!counters_on()) return;
    if (!w->counting) w->counting = new Counting();
    w->counting->totals[C_WAVES] += (n + kWave - 1) / kWave;
}

// After a launch: each worker's totals into the kernel's row.
static void counters_launch_done(const LaunchSpec& s) {
    if (!counters_on()) return;
    std::lock_guard<std::mutex> g(g_count_mu);
    KernelCounts* k = nullptr;
    for (auto& x : g_kernel_counts) if (x.kernel == s.kernel && x.line == s.line) k = &x;
    if (!k) { g_kernel_counts.push_back(KernelCounts{s.kernel, s.line, 0, {0}}); k = &g_kernel_counts.back(); }
    ++k->launches;
    uint64_t used[512 / 64] = {0};
    {
        std::lock_guard<std::mutex> gw(g_workers_mu);
        for (Worker* w : g_workers) {
            if (!w->counting) continue;
            for (int i = 0; i < C_N; ++i) { k->c[i] += w->counting->totals[i]; w->counting->totals[i] = 0; }
            for (int i = 0; i < 512 / 64; ++i) { used[i] |= w->counting->lds_used[i]; w->counting->lds_used[i] = 0; }
        }
    }
    long lds = 0;
    for (int i = 0; i < g_nlds.load(); ++i)
        if ((used[i / 64] >> (i % 64)) & 1) lds += static_cast<long>(g_lds[i].bytes);
    k->workgroup = std::max<long>(k->workgroup, static_cast<long>(s.block.x) * s.block.y * s.block.z);
    k->lds_static = std::max(k->lds_static, lds);
    k->lds_dynamic = std::max(k->lds_dynamic, static_cast<long>(s.shared_bytes));
}

static std::vector<int> source_lines(const std::vector<uintptr_t>& pcs);
static void trace_print() {
    std::lock_guard<std::mutex> g(g_trace_mu);
    if (g_trace.empty()) return;
    std::vector<uintptr_t> pcs;
    for (const Group& x : g_trace) pcs.push_back(x.pc);
    std::vector<int> lines = source_lines(pcs);
    for (size_t i = 0; i < g_trace.size(); ++i) {
        const Group& x = g_trace[i];
        std::string out;
        char buf[64];
        for (int l = 0; l < 64; ++l)
            if ((x.lanes >> l) & 1) {
                std::snprintf(buf, sizeof buf, " %d:%llu", l, static_cast<unsigned long long>(x.addr[l]));
                out += buf;
            }
        std::fprintf(stderr, "%s trace: line %d %s %s %d bytes:%s\n", kLabel, lines[i], x.lds ? "lds" : "global",
                     x.write ? "write" : "read", x.size, out.c_str());
    }
}

static void counters_print() {
    if (!counters_on()) return;
    trace_print();
    std::lock_guard<std::mutex> g(g_count_mu);
    for (const auto& k : g_kernel_counts) {
        std::fprintf(stderr, "%s counters: kernel %s (launched at line %d, %ld launch(es)):", kLabel, k.kernel.c_str(),
                     k.line, k.launches);
        for (int i = 0; i < C_N; ++i) std::fprintf(stderr, " %s=%lld", kCounterName[i], k.c[i]);
        std::fprintf(stderr, "\n");
        std::fprintf(stderr, "%s resources: kernel %s (launched at line %d): workgroup_size=%ld lds_static_bytes=%ld "
                     "lds_dynamic_bytes=%ld\n", kLabel, k.kernel.c_str(), k.line, k.workgroup, k.lds_static,
                     k.lds_dynamic);
    }
}

// --- static __shared__ arrays: an index outside an extent ----------------------------------------------------------
// Learner code is built with the compiler's array-bounds check (-fsanitize=array-bounds, recoverable): an index of
// a fixed-extent array outside [0, extent) calls __ubsan_handle_out_of_bounds (below) before the access. Inside a
// kernel, with the checks on, the thread notes the array's type and the index, and its next access judges them:
// an access outside the static __shared__ variable the index belongs to (past its end or before its start: on
// MI300X another LDS variable, or outside the block's LDS) stops that lane before it happens; every lane that
// reaches it in the same round stops too, and at the round's end the finding names the variable, the lanes and
// the indexes, and the program stops (memcheck). An inner index past its row that stays inside the variable
// (tile[0][40] of a [16][16] tile: the GPU reads tile[2][8]) and arrays that are not __shared__ (a thread's
// private array, a struct's member) are not findings here.
struct UbsanLoc { const char* file; uint32_t line, column; };
struct UbsanType { uint16_t kind, info; char name[1]; };
struct UbsanOob { UbsanLoc loc; const UbsanType* array; const UbsanType* index; };

// The extents at the end of a type's name as the compiler prints it: 'float[16][17]' -> 16, 17 (0 if none).
static int type_dims(const char* name, unsigned* dims, int max, char* elem, size_t elem_n) {
    const char* p = std::strchr(name, '[');
    if (!p) return 0;
    const char* b = name + (name[0] == '\'' ? 1 : 0);
    std::snprintf(elem, elem_n, "%.*s", static_cast<int>(p - b), b);
    int k = 0;
    while (*p == '[' && k < max) {
        char* end = nullptr;
        const unsigned long v = std::strtoul(p + 1, &end, 10);
        if (!end || *end != ']') return 0;
        dims[k++] = static_cast<unsigned>(v);
        p = end + 1;
    }
    return k;
}

static void oob_note(const UbsanOob* d, uintptr_t handle) {
    Worker* w = t_worker;
    Fiber* f = w ? w->cur.load(std::memory_order_relaxed) : nullptr;
    if (!f || !checks_on() || f->oob_type) return;     // host code, or the outer index of this access already noted
    long long v = static_cast<long long>(handle);
    const unsigned bits = 1u << (d->index->info >> 1);
    if (d->index->kind == 0 && bits < 64) {             // an integer narrower than the handle: its value, extended
        if (d->index->info & 1) v = static_cast<long long>(static_cast<uint64_t>(handle) << (64 - bits)) >> (64 - bits);
        else v = static_cast<long long>(static_cast<uint64_t>(handle) & ((1ull << bits) - 1));
    }
    f->oob_type = d->array;
    f->oob_index = v;
}

// The lane stops before its access outside static __shared__ variable `best` (k: the rank of the indexed array,
// extent: its outer extent); the round's other lanes that reach it stop too; at the round's end lds_oob_stop reports.
static void oob_stop_lane(Worker* w, Fiber* f, int best, const char* elem, int k, unsigned extent, long long index,
                          bool write, uintptr_t pc) {
    const int wave = static_cast<int>(f->coords.linear / kWave);
    if (!w->oob_threads) {
        char shape[64] = "";
        for (int i = 0, m = 0; i < g_lds[best].rank; ++i)
                m += std::snprintf(shape + m, sizeof shape - m, "[%u]", g_lds[best].dims[i]);
        const int dim = g_lds[best].rank - k + 1;
        char which[48] = "";
        if (g_lds[best].rank > 1) std::snprintf(which, sizeof which, " (dimension %d, extent %u)", dim, extent);
        std::snprintf(w->oob_what, sizeof w->oob_what, "__shared__ %s%s%s%s%s", elem, elem[0] ? " " : "",
                      g_lds[best].name, shape, which);
        w->oob_wave = wave;
        w->oob_lanes = 0;
        w->oob_lo = w->oob_hi = index;
        w->oob_pc = pc;
        w->oob_write = write;
    }
    ++w->oob_threads;
    if (wave == w->oob_wave) w->oob_lanes |= 1ull << (f->coords.linear % kWave);
    w->oob_lo = std::min(w->oob_lo, index);
    w->oob_hi = std::max(w->oob_hi, index);
    f->state = STOPPED;         // the access never happens: the round ends, then the program stops
    to_scheduler(f);
    fatal("internal: a lane stopped at an out-of-bounds access was resumed");
}

__attribute__((noinline)) static void oob_judge(Worker* w, Fiber* f, uintptr_t a, bool write, uintptr_t pc) {
    const UbsanType* t = static_cast<const UbsanType*>(f->oob_type);
    const long long index = f->oob_index;
    f->oob_type = nullptr;
    const long rel = static_cast<long>(a - w->tp);
    // not near static LDS (which lies below the thread pointer; an index far past the last variable may land above
    // it): a private array, a struct's member in memory
    if (rel < -kStaticSpan || rel >= kStaticSpan) return;
    unsigned dims[4];
    char elem[64];
    const int k = type_dims(t->name, dims, 4, elem, sizeof elem);
    if (!k) return;
    const int n = g_nlds.load(std::memory_order_acquire);
    int best = -1;
    long dist = LONG_MAX;
    // the outermost index of a whole variable (its type is the variable's): the variable is the one whose element
    // `index` holds this address (a row index far past a [16][16] tile lands past a same-shaped neighbour too)
    int exact = -1;
    for (int i = 0; i < n && exact < 0; ++i) {
        const LdsVar& v = g_lds[i];
        if (v.rank != k || std::memcmp(v.dims, dims, k * sizeof(unsigned)) != 0 || !dims[0]) continue;
        const long stride = static_cast<long>(v.bytes / dims[0]);
        const long start = rel - static_cast<long>(index) * stride;
        if (stride > 0 && start >= v.rel && start < v.rel + stride) exact = i;
    }
    for (int i = 0; i < n && exact < 0; ++i) {
        const LdsVar& v = g_lds[i];
        if (v.rank < k || std::memcmp(v.dims + (v.rank - k), dims, k * sizeof(unsigned)) != 0) continue;
        const long lo = v.rel, hi = v.rel + static_cast<long>(v.bytes);
        if (rel >= lo && rel < hi) {
            if (v.rank > k) return;   // an inner index past its row, still inside the variable: the GPU does the same
            continue;                 // inside another variable of the same type: the index ran over from a neighbour
        }
        const long d = index >= 0 ? rel - hi : lo - rel;
        if (d >= 0 && d < dist) { dist = d; best = i; }
    }
    if (exact >= 0) best = exact;
    if (best < 0) return;     // no __shared__ variable of that shape: not this check's (another thread-local)
    oob_stop_lane(w, f, best, elem, k, dims[0], index, write, pc);
}

// A lane's access in the pad right after a static __shared__ variable (simulate.py's hipsim_pad_*, which nothing
// uses): one past the variable's end, reached through its address or a whole-element copy (`(&st[64])->z`,
// `S s = st[64]`), where the compiler's bounds check allows the index (an address one past the end is valid C++).
// The lane stops there as at an index past the extent (oob_judge); the index is the element the address lies in.
__attribute__((noinline)) static void pad_judge(Worker* w, Fiber* f, long rel, bool write, uintptr_t pc) {
    const int n = g_nlds.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
        const LdsVar& v = g_lds[i];
        if (rel < v.pad_lo || rel >= v.pad_hi) continue;
        const long stride = v.rank ? static_cast<long>(v.bytes / std::max(v.dims[0], 1u)) : static_cast<long>(v.bytes);
        const long long index = stride > 0 ? (rel - v.rel) / stride : 0;
        oob_stop_lane(w, f, i, v.elem[0] ? v.elem : "", v.rank, v.rank ? v.dims[0] : 1u, index, write, pc);
    }
}

[[noreturn]] static void lds_oob_stop(Worker* w) {
    char lanes[256], where[256], idx[64];
    lanes_text(w->oob_lanes, lanes, sizeof lanes);
    if (w->oob_lo == w->oob_hi) std::snprintf(idx, sizeof idx, "index %lld", w->oob_lo);
    else std::snprintf(idx, sizeof idx, "indexes %lld to %lld", w->oob_lo, w->oob_hi);
    const bool past = w->oob_hi >= 0;
    record(MEMCHECK, w->oob_pc, 0, "%s %s of wavefront %d of %s %s %s at %s: out of bounds (%s; %d thread(s) "
           "reached it before the stop). On MI300X the access lands in another LDS variable or outside the block's LDS (a read "
           "gets a neighbour's value or 0, a write overwrites a neighbour or is lost). Guard the index (if (i < n)) "
           "or size the array for every thread", __builtin_popcountll(w->oob_lanes) > 1 ? "lanes" : "lane", lanes,
           w->oob_wave, kernel_where(w, where, sizeof where),
           w->oob_write ? "writes" : "reads", w->oob_what, idx, past ? "past its end" : "before its start",
           w->oob_threads);
    stop_here();
}

// Lockstep (HIPSIM_LOCKSTEP, on unless 0): all active lanes of a wavefront perform their k-th store before any
// performs its (k+1)-th, and read only after every lane's store before the read, as the lanes of a CDNA3 wavefront
// execute a load or store instruction together. A lane hands the CPU back to the scheduler (which resumes every
// ready lane of the block once per round) before each store or atomic to memory other than its own stack, its
// coordinates and the launch's copy of the arguments, and before its first such load after a store of its own;
// a run of loads between them needs no switch (loads of one round see the memory of the round's start, whoever
// reads first). So a non-atomic += from all lanes loads 64 times, then stores 64 times (updates lost, as on the
// GPU), and wave-synchronous code reads what the other lanes' previous store wrote: the results of a switch before
// every access, for lanes that run the same instructions. Divergent lanes are aligned by the count of their stores
// (and loads after stores), not by the exec mask of each branch (documented in DESIGN's simulator notes). A lane
// alone in its round (the others done or waiting) runs on without switching.
static int g_lockstep = -1;
static bool lockstep_on() {
    if (g_lockstep < 0) {
        const char* v = std::getenv("HIPSIM_LOCKSTEP");
        g_lockstep = (v && std::strcmp(v, "0") == 0) ? 0 : 1;
    }
    return g_lockstep == 1;
}

static void check_access(Worker* w, Fiber* f, uintptr_t a, long rel, int var, int size, bool write, uintptr_t pc,
                         bool atomic);
// A read of a static __shared__ word that changes nothing: inside one word, every byte written in this block, no
// other wave's write in this barrier interval, and this wave already read these bytes here from this code address
// (what lds_access would record is recorded).
static inline bool quiet_lds_read(Worker* w, Fiber* f, long rel, int size, uintptr_t pc) {
    const size_t idx = static_cast<size_t>(rel + kStaticSpan);
    if (!w->shadow || idx / 4 != (idx + size - 1) / 4 || idx + size > kShadowEntries) return false;
    const Shadow& e = w->shadow[idx / 4];
    const uint8_t m = static_cast<uint8_t>(((1u << size) - 1) << (idx % 4));
    const uint16_t wave = static_cast<uint16_t>(f->coords.linear / kWave);
    const uint16_t bit = static_cast<uint16_t>(1u << (wave & 15));
    return e.igen == w->gen0 && (e.imask & m) == m && !(e.wgen == w->gen && e.wwave != wave && (e.wmask & m)) &&
           e.rgen == w->gen && (e.rwaves & bit) && (e.rmask & m) == m && e.rpc == pc;
}
// The most common checked access, settled without the general path (same verdict, nothing to record): a read of
// 4, 8 or 16 aligned bytes of the buffer the last access hit, live and in bounds, every byte written, each word
// already read in this launch by this block (or by several) and written by no block in it. What the general path
// would still record, this wavefront's read for racecheck between the block's wavefronts (wave_race: a later write
// by another wavefront of the block is then a race; no wavefront wrote these words in this launch, so the read
// itself is none), is recorded here.
static const char* wave_race(Worker* w, Fiber* f, uintptr_t word, unsigned bytes, bool write);
static inline bool quiet_read(Worker* w, Fiber* f, uintptr_t a, int size) {
    if ((size != 4 && size != 8 && size != 16) || (a & 3) || g_frees.load(std::memory_order_relaxed) != t_recent_frees)
        return false;
    Alloc* r = nullptr;
    for (int i = 0; i < 4 && !r; ++i)
        if (t_recent[i] && a >= t_recent[i]->start && a + size <= t_recent[i]->end) r = t_recent[i];
    if (!r || !r->live || !r->race) return false;
    if (r->written) {
        const uint8_t* m = r->written + (a - r->start);
        if (size == 4) {
            uint32_t v;
            std::memcpy(&v, m, 4);
            if (v != 0x01010101u) return false;
        } else {
            uint64_t v[2] = {0x0101010101010101ull, 0x0101010101010101ull};
            std::memcpy(&v[0], m, 8);
            if (size == 16) std::memcpy(&v[1], m + 8, 8);
            if ((v[0] & v[1]) != 0x0101010101010101ull) return false;
        }
    }
    const uint32_t launch = g_launch_tag.load(std::memory_order_relaxed);
    const uint32_t block = static_cast<uint32_t>(w->block_linear.load(std::memory_order_relaxed)) & 0xfffff;
    const uint64_t mine = static_cast<uint64_t>(tag_of(launch, block, 0xf)) << 32;
    const uint64_t many = static_cast<uint64_t>(tag_of(launch, kManyBlocks, 0xf)) << 32;
    const uint64_t* e = r->race + (a - r->start) / 4;
    for (int k = 0; k < size / 4; ++k) {
        const uint64_t old = __atomic_load_n(&e[k], __ATOMIC_RELAXED);
        const uint32_t wt = static_cast<uint32_t>(old);
        if (tag_launch(wt) == launch) return false;   // written in this launch (by another block, or wavefront)
        const uint64_t rd = old & 0xffffffff00000000ull;
        if (rd != mine && rd != many) return false;                            // a read tag to update
    }
    if (w->nthreads > kWave)
        for (int k = 0; k < size / 4; ++k) wave_race(w, f, (r->start >> 2) + (a - r->start) / 4 + k, 0xf, false);
    return true;
}
// Every traced access: its class (stack, LDS, other memory), the lockstep switch, then the checks and counters. Kept
// small (the checks are another function): the lanes switch here, and what a lane's frame holds at the switch is
// what the CPU reloads when it resumes that lane.
__attribute__((noinline)) static void on_access_lane(Worker* w, Fiber* f, uintptr_t a, int size, bool write,
                                                     uintptr_t pc, bool atomic);
// The callbacks' first test, inlined in each: with the checks and counters off, a load of a lane that has not
// stored since it last handed back the CPU needs nothing (no switch, no check).
static inline void on_access(uintptr_t a, int size, bool write, uintptr_t pc, bool atomic = false) {
    Worker* w = t_worker;
    if (!w) return;
    Fiber* f = w->cur.load(std::memory_order_relaxed);
    if (!f) return;
    if (g_plain && !write && !f->stored && !f->oob_type) return;
    on_access_lane(w, f, a, size, write, pc, atomic);
}
static void on_access_lane(Worker* w, Fiber* f, uintptr_t a, int size, bool write, uintptr_t pc, bool atomic) {
    if (__builtin_expect(f->oob_type != nullptr, 0)) oob_judge(w, f, a, write, pc);
    const bool checks = checks_on(), counting = counters_on(), lockstep = lockstep_on();
    const bool switches = lockstep && (write || f->stored);      // a store, or the first load after one
    if (!switches && !checks && !counting) return;
    const uintptr_t stacks = reinterpret_cast<uintptr_t>(w->stacks);
    if (a - stacks < w->stack_bytes * kMaxThreads) return;        // the thread's own stack
    const uintptr_t fibers = reinterpret_cast<uintptr_t>(w->fibers.data());
    if (a - fibers < w->fibers.size() * sizeof(Fiber)) return;     // threadIdx and the like
    if (a - t_state_lo < t_state_hi - t_state_lo) return;          // the kernel's arguments
    const long rel = static_cast<long>(a - w->tp);
    int var = -1;
    if (rel >= g_lds_lo.load(std::memory_order_relaxed) && rel < g_lds_hi.load(std::memory_order_relaxed)) {
        const int n = g_nlds.load(std::memory_order_acquire);
        for (int i = 0; i < n && var < 0; ++i)
            if (rel >= g_lds[i].rel && rel < g_lds[i].rel + static_cast<long>(g_lds[i].bytes)) var = i;
    }
    if (var < 0 && rel >= -g_tls_bytes && rel < 64) {                // the program's other thread-locals (blockIdx)
        if (checks_on() && rel < g_lds_hi.load(std::memory_order_relaxed) &&
            rel >= g_lds_lo.load(std::memory_order_relaxed))
            pad_judge(w, f, rel, write, pc);                           // or the pad after a __shared__ variable
        return;
    }
    if (switches) {
        if (!w->solo) {
            f->state = READY;
            to_scheduler(f);
        }
        f->stored = write;
    }
    if (!checks && !counting) return;
    if (!write && !counting && (var < 0 ? quiet_read(w, f, a, size) : quiet_lds_read(w, f, rel, size, pc))) return;
    check_access(w, f, a, rel, var, size, write, pc, atomic);
}

__attribute__((noinline)) static void check_access(Worker* w, Fiber* f, uintptr_t a, long rel, int var, int size,
                                                   bool write, uintptr_t pc, bool atomic) {
    const bool checks = checks_on(), counting = counters_on();
    if (var >= 0) {
        // the byte offset in the variable: banks as if it began at LDS address 0 (a uniform shift of all lanes'
        // addresses changes no conflict count)
        const LdsVar& v = g_lds[var];
        if (atomic) {
            lds_access(w, f, static_cast<size_t>(rel + kStaticSpan), size, true, pc, v.name, rel - v.rel, true);
            return;
        }
        if (counting) {
            count_access(w, f, static_cast<uintptr_t>(rel - v.rel), size, write, pc, true);
            w->counting->lds_used[var / 64] |= 1ull << (var % 64);
        }
        if (checks) lds_access(w, f, static_cast<size_t>(rel + kStaticSpan), size, write, pc, v.name, rel - v.rel);
        return;
    }
    const uintptr_t d = a - reinterpret_cast<uintptr_t>(w->dyn);
    if (d < kSharedBytes && counting && !atomic) count_access(w, f, static_cast<uintptr_t>(d), size, write, pc, true);
    if (d < kSharedBytes && !checks) return;
    if (d < kSharedBytes) {
        const size_t have = w->spec ? w->spec->shared_bytes : 0;
        if (d + size > have) {
            char where[256];
            if (fresh(w, MEMCHECK, pc)) {
                where_text(w, f, where, sizeof where);
                record(MEMCHECK, pc, 0, "%s %s dynamic shared memory at byte %zu, but the launch gave the block %zu "
                       "bytes: out of bounds. Pass the size as the launch's third argument", where,
                       write ? "writes" : "reads", static_cast<size_t>(d), have);
            }
            stop_here();
        }
        lds_access(w, f, static_cast<size_t>(kStaticSpan) + d, size, write, pc, "(dynamic shared memory)",
                   static_cast<long>(d), atomic);
        return;
    }
    if (counting && !atomic) {
        Alloc* r = lookup(a);
        if (r && r->live) count_access(w, f, a, size, write, pc, false);
    }
    if (checks) global_access(w, f, a, size, write, pc, atomic);
}

// An atomic: checked as a read (initcheck) that also writes, never as a race (atomics of different lanes, waves or
// blocks on one word are the ordered way to share it). In lockstep like a store whether the checks are on or off (the
// lanes perform their k-th atomic before any performs its (k+1)-th, as a wavefront issues one atomic for its lanes),
// so a program gets the same answer either way.
void atomic_note(const volatile void* p, size_t bytes) {
    on_access(reinterpret_cast<uintptr_t>(p), static_cast<int>(bytes), true,
              reinterpret_cast<uintptr_t>(__builtin_return_address(0)), true);
}

// hipblasSgemm's answer (hipblas/hipblas.h): a host reference GEMM, C = alpha op(A) op(B) + beta C, column-major,
// summed in double; here, outside the learner's instrumented code, so its loads cost what a host loop costs.
void reference_sgemm(bool a_n, bool b_n, int m, int n, int k, float alpha, const float* A, int lda, const float* B,
                     int ldb, float beta, float* C, int ldc) {
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            double acc = 0;
            for (int p = 0; p < k; ++p) {
                const float a = a_n ? A[i + static_cast<size_t>(p) * lda] : A[p + static_cast<size_t>(i) * lda];
                const float b = b_n ? B[p + static_cast<size_t>(j) * ldb] : B[j + static_cast<size_t>(p) * ldb];
                acc += static_cast<double>(a) * b;
            }
            float& c = C[i + static_cast<size_t>(j) * ldc];
            c = static_cast<float>(alpha * acc + (beta == 0.f ? 0.0 : static_cast<double>(beta) * c));
        }
}

// host side: what a copy or a memset writes counts as written
static void mark_written(const void* dst, const void* src, size_t bytes) {
    std::lock_guard<std::mutex> g(g_alloc_mu);
    Alloc* r = find_alloc(dst);
    if (!r || !r->written) return;
    uintptr_t a = reinterpret_cast<uintptr_t>(dst);
    if (a < r->start || a + bytes > r->end) return;
    Alloc* s = src ? find_alloc(src) : nullptr;
    uintptr_t b = reinterpret_cast<uintptr_t>(src);
    if (s && s->written && b >= s->start && b + bytes <= s->end)
        std::memmove(r->written + (a - r->start), s->written + (b - s->start), bytes);   // device to device
    else
        std::memset(r->written + (a - r->start), 1, bytes);
}
void device_written(const void* p, size_t bytes) { mark_written(p, nullptr, bytes); }
static void mark_all_written(void* p) {
    std::lock_guard<std::mutex> g(g_alloc_mu);
    Alloc* r = find_alloc(p);
    if (r && r->written) { munmap(r->written, (r->bytes + 15) & ~size_t(15)); r->written = nullptr; }
}
}  // namespace hipsim

namespace hipsim {
// Copies the compiler leaves as memcpy, memmove or memset (a struct copy `s = p[i]` of a 12- or 16-byte struct, a
// memcpy in kernel code): learner code is built with ThreadSanitizer's instrumentation of these calls alone
// (-fsanitize=thread with its load, store, atomic and function instrumentation off: loads and stores are traced by
// the coverage callbacks above), so each calls __tsan_memcpy & co. (below) instead of being inlined out of sight.
// In a kernel a copy is traced as the ISA issues it: pieces of at most 16 bytes (one global_load_dwordx4 or
// ds_read_b128 each; a 12-byte struct is one dwordx3 access), each a load of the source, then a store of the
// destination, checked (bounds, races, init) and in lockstep like any access. Elsewhere it is a plain copy.
static inline Fiber* kernel_fiber() {
    Worker* w = t_worker;
    return w ? w->cur.load(std::memory_order_relaxed) : nullptr;
}
static inline int copy_piece(size_t left) {
    return left >= 16 ? 16 : left >= 12 ? 12 : left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
}
static void traced_copy(Fiber* f, char* d, const char* s, size_t n, uintptr_t pc) {
    if (d > s && d < s + n) {            // an overlapping memmove: every piece read before any is written
        std::vector<char> tmp(n);
        for (size_t off = 0; off < n; off += copy_piece(n - off)) {
            on_access(reinterpret_cast<uintptr_t>(s + off), copy_piece(n - off), false, pc);
            std::memcpy(tmp.data() + off, s + off, copy_piece(n - off));
        }
        for (size_t off = 0; off < n; off += copy_piece(n - off))
            on_access(reinterpret_cast<uintptr_t>(d + off), copy_piece(n - off), true, pc);
        std::memcpy(d, tmp.data(), n);
        return;
    }
    // an index noted for this copy may be the source's or the destination's: judged at both
    const void* pending = f->oob_type;
    const long long index = f->oob_index;
    alignas(16) char tmp[16];
    for (size_t off = 0; off < n;) {
        const int k = copy_piece(n - off);
        on_access(reinterpret_cast<uintptr_t>(s + off), k, false, pc);
        std::memcpy(tmp, s + off, k);
        if (pending) { f->oob_type = pending; f->oob_index = index; pending = nullptr; }
        on_access(reinterpret_cast<uintptr_t>(d + off), k, true, pc);
        std::memcpy(d + off, tmp, k);
        off += k;
    }
}
static void traced_set(char* d, int c, size_t n, uintptr_t pc) {
    for (size_t off = 0; off < n;) {
        const int k = copy_piece(n - off);
        on_access(reinterpret_cast<uintptr_t>(d + off), k, true, pc);
        std::memset(d + off, c, k);
        off += k;
    }
}
}  // namespace hipsim

#define HIPSIM_PC reinterpret_cast<uintptr_t>(__builtin_return_address(0))
extern "C" {
void __sanitizer_cov_load1(uint8_t* a) { hipsim::on_access(reinterpret_cast<uintptr_t>(a), 1, false, HIPSIM_PC); }
void __sanitizer_cov_load2(uint16_t* a) { hipsim::on_access(reinterpret_cast<uintptr_t>(a), 2, false, HIPSIM_PC); }
void __sanitizer_cov_load4(uint32_t* a) { hipsim::on_access(reinterpret_cast<uintptr_t>(a), 4, false, HIPSIM_PC); }
void __sanitizer_cov_load8(uint64_t* a) { hipsim::on_access(reinterpret_cast<uintptr_t>(a), 8, false, HIPSIM_PC); }
void __sanitizer_cov_load16(__int128* a) { hipsim::on_access(reinterpret_cast<uintptr_t>(a), 16, false, HIPSIM_PC); }
void __sanitizer_cov_store1(uint8_t* a) { hipsim::on_access(reinterpret_cast<uintptr_t>(a), 1, true, HIPSIM_PC); }
void __sanitizer_cov_store2(uint16_t* a) { hipsim::on_access(reinterpret_cast<uintptr_t>(a), 2, true, HIPSIM_PC); }
void __sanitizer_cov_store4(uint32_t* a) { hipsim::on_access(reinterpret_cast<uintptr_t>(a), 4, true, HIPSIM_PC); }
void __sanitizer_cov_store8(uint64_t* a) { hipsim::on_access(reinterpret_cast<uintptr_t>(a), 8, true, HIPSIM_PC); }
void __sanitizer_cov_store16(__int128* a) { hipsim::on_access(reinterpret_cast<uintptr_t>(a), 16, true, HIPSIM_PC); }
// The compiler's array-bounds check (see oob_judge); the recoverable form returns and the access follows.
void __ubsan_handle_out_of_bounds(void* data, void* index) {
    hipsim::oob_note(static_cast<const hipsim::UbsanOob*>(data), reinterpret_cast<uintptr_t>(index));
}
// Copies (see traced_copy), and the instrumentation's constructor, which needs nothing here.
void* __tsan_memcpy(void* d, const void* s, size_t n) {
    hipsim::Fiber* f = hipsim::kernel_fiber();
    if (!f) return std::memcpy(d, s, n);
    hipsim::traced_copy(f, static_cast<char*>(d), static_cast<const char*>(s), n, HIPSIM_PC);
    return d;
}
void* __tsan_memmove(void* d, const void* s, size_t n) {
    hipsim::Fiber* f = hipsim::kernel_fiber();
    if (!f) return std::memmove(d, s, n);
    hipsim::traced_copy(f, static_cast<char*>(d), static_cast<const char*>(s), n, HIPSIM_PC);
    return d;
}
void* __tsan_memset(void* d, int c, size_t n) {
    if (!hipsim::kernel_fiber()) return std::memset(d, c, n);
    hipsim::traced_set(static_cast<char*>(d), c, n, HIPSIM_PC);
    return d;
}
void __tsan_init() {}
}
namespace hipsim {

// --- faults: a clear message, never a bare "Segmentation fault" --------------------------------------------------
static void on_fault(int sig, siginfo_t* info, void*) {
    flush_findings();
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
static void counters_print();
static void at_exit_label() {
    flush_findings();
    counters_print();
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
// memory the host writes directly: not initchecked (the host's own stores are not traced)
static hipError_t host_visible(void** p, size_t bytes) {
    hipError_t e = hipMalloc(p, bytes);
    if (e == hipSuccess && *p) mark_all_written(*p);
    return e;
}
hipError_t hipMallocManaged(void** p, size_t bytes, unsigned) { return host_visible(p, bytes); }
hipError_t hipHostMalloc(void** p, size_t bytes, unsigned) { return host_visible(p, bytes); }
hipError_t hipMallocHost(void** p, size_t bytes) { return host_visible(p, bytes); }
hipError_t hipHostAlloc(void** p, size_t bytes, unsigned) { return host_visible(p, bytes); }
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
    mark_written(dst, src, bytes);
    return hipSuccess;
}
static hipError_t do_memset(void* dst, int v, size_t bytes, const char* api) {
    if (bytes == 0) return hipSuccess;
    if (!dst || !range_ok(dst, bytes, api, "destination")) return set_error(hipErrorInvalidValue);
    t_api = api;
    std::memset(dst, v, bytes);
    t_api = nullptr;
    mark_written(dst, nullptr, bytes);
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
