/*
 * perflab's in-process allocation recorder, loaded into a command that
 * `perflab profile --alloc` launches (LD_PRELOAD), as heaptrack and bytehound do.
 *
 * Why C and not Rust: this library replaces malloc itself. It must not allocate
 * through what it replaces, must not bring a runtime or an allocator of its own,
 * and must load into any program (C, C++, Rust, Go with cgo). A few hundred lines
 * of C against the C library and libgcc's unwinder do that; a Rust cdylib would
 * carry std (which allocates) and need the same unsafe code. No crate provides
 * an allocator interposer that aggregates by call stack.
 *
 * Why not the uprobes the attach mode uses: every probed call traps into the
 * kernel (0.8-9 us here) and its stack is copied out through a ring buffer that
 * perflab must drain; on 200,000 malloc/free pairs that took 13-15 s and lost
 * records, against 0.5-0.7 s for heaptrack. Here a call costs an unwind of its
 * own stack (libgcc's _Unwind_Backtrace through glibc's lock-free
 * _dl_find_object) and a hash-table update, and nothing leaves the process
 * until it exits.
 *
 * What it records, per process image, aggregated in memory allocated with mmap
 * (never through malloc):
 *   - per allocating function: every call and every byte requested (exact);
 *   - per call stack of an allocation: calls, bytes and the blocks still live;
 *     with PERFLAB_ALLOC_SAMPLE_BYTES = m > 0 only allocations containing a
 *     byte chosen by a Poisson process of mean gap m bytes (tcmalloc's,
 *     jemalloc's and Go's rule) are unwound, each weighted by
 *     1 / (1 - exp(-size / m)) so totals per stack are unbiased whatever the
 *     program's allocation pattern (every-N-th-call sampling aliases);
 *   - frees: their count and bytes, and frees of blocks it never saw.
 * At exit (and before an exec replaces the image) it writes a text file
 * PERFLAB_ALLOC_DIR/alloc.PID.NANOS that perflab reads: see write_dump().
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#define MAX_FRAMES 64

enum role { R_MALLOC, R_CALLOC, R_REALLOC, R_FREE, R_ALIGNED_ALLOC, R_MEMALIGN, R_POSIX_MEMALIGN, R_VALLOC, R_PVALLOC, R_COUNT };
static const char *role_names[R_COUNT] = {"malloc", "calloc", "realloc", "free", "aligned_alloc", "memalign", "posix_memalign", "valloc", "pvalloc"};

/* The functions this library stands in front of, found with dlsym(RTLD_NEXT). */
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execvp)(const char *, char *const[]);
static int (*real_execv)(const char *, char *const[]);

/* dlsym may allocate (calloc) before the real functions are known: from here. */
static char bootstrap[16384];
static size_t bootstrap_used;
static int resolving;

/* Per thread: inside a hook (the unwinder, dlsym and stdio may allocate), and
 * the bytes left before the next sampled byte. initial-exec: a preloaded
 * library's TLS is static, so reaching it never allocates. */
static __thread int in_hook __attribute__((tls_model("initial-exec")));
static __thread double bytes_to_sample __attribute__((tls_model("initial-exec")));
static __thread uint64_t rng_state __attribute__((tls_model("initial-exec")));

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int ready;    /* the tables exist and recording is on */
static pid_t owner;  /* the process the tables describe: a vfork child shares them */
static char last_dump[4200]; /* written before an exec: removed if the exec fails */
static int finished; /* written at exit: later calls pass through */
static double sample_mean; /* 0: every call is unwound */
static char out_dir[4096];
static uintptr_t own_start, own_end; /* this library's code: its frames are not the program's */

struct fn_total { uint64_t calls, bytes; };
static struct fn_total fn_totals[R_COUNT];
static uint64_t frees, freed_bytes, unmatched_frees, untracked_frees;

/* A call stack of allocations: estimated calls and bytes (exact when every call
 * is unwound), and its blocks live now. */
struct site {
    uint64_t hash;
    uint32_t role, nframes;
    uint64_t frames_at; /* index into frame_pool */
    double calls, bytes, live_blocks, live_bytes;
    double bytes_variance; /* of the sampled estimate of bytes (0 when exact) */
};
static struct site *sites;
static size_t site_cap, site_count;
static uintptr_t *frame_pool;
static size_t frame_cap, frame_count;

/* A live block: its address, size, site and weight (1 when every call is
 * unwound). Open addressing; key 0 is empty, 1 a deleted slot. */
struct block { uintptr_t ptr; uint64_t size; uint32_t site; float weight; };
static struct block *blocks;
static size_t block_cap, block_count, block_used;

static void *map(size_t bytes) {
    void *p = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? 0 : p;
}

static uint64_t mix(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return x;
}

static double uniform(void) {
    if (rng_state == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        rng_state = mix((uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&ts) | 1;
    }
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return ((rng_state >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
}

static double next_gap(void) { return -sample_mean * log(uniform()); }

static __thread int sampler_started __attribute__((tls_model("initial-exec")));

static int grow_sites(void) {
    size_t cap = site_cap ? site_cap * 2 : 4096;
    struct site *grown = map(cap * sizeof *grown);
    if (!grown) return 0;
    for (size_t i = 0; i < site_cap; i++) {
        if (!sites[i].nframes && !sites[i].hash) continue;
        size_t j = sites[i].hash & (cap - 1);
        while (grown[j].nframes || grown[j].hash) j = (j + 1) & (cap - 1);
        grown[j] = sites[i];
    }
    /* Blocks name sites by slot: re-point them. */
    if (site_cap) {
        for (size_t b = 0; b < block_cap; b++) {
            if (blocks[b].ptr <= 1) continue;
            struct site *old = &sites[blocks[b].site];
            size_t j = old->hash & (cap - 1);
            while (!(grown[j].hash == old->hash && grown[j].frames_at == old->frames_at)) j = (j + 1) & (cap - 1);
            blocks[b].site = (uint32_t)j;
        }
        munmap(sites, site_cap * sizeof *sites);
    }
    sites = grown;
    site_cap = cap;
    return 1;
}

static int grow_blocks(void) {
    size_t cap = block_cap ? (block_count * 4 > block_cap ? block_cap * 2 : block_cap) : 65536;
    struct block *grown = map(cap * sizeof *grown);
    if (!grown) return 0;
    for (size_t i = 0; i < block_cap; i++) {
        if (blocks[i].ptr <= 1) continue;
        size_t j = mix(blocks[i].ptr) & (cap - 1);
        while (grown[j].ptr) j = (j + 1) & (cap - 1);
        grown[j] = blocks[i];
    }
    if (blocks) munmap(blocks, block_cap * sizeof *blocks);
    blocks = grown;
    block_cap = cap;
    block_used = block_count;
    return 1;
}

static uintptr_t *frames_room(size_t n) {
    if (frame_count + n > frame_cap) {
        size_t cap = frame_cap ? frame_cap * 2 : 65536;
        while (cap < frame_count + n) cap *= 2;
        uintptr_t *grown = map(cap * sizeof *grown);
        if (!grown) return 0;
        if (frame_pool) {
            memcpy(grown, frame_pool, frame_count * sizeof *grown);
            munmap(frame_pool, frame_cap * sizeof *frame_pool);
        }
        frame_pool = grown;
        frame_cap = cap;
    }
    return frame_pool + frame_count;
}

struct trace { uintptr_t ips[MAX_FRAMES]; unsigned n; };

static _Unwind_Reason_Code on_frame(struct _Unwind_Context *context, void *arg) {
    struct trace *t = arg;
    uintptr_t ip = _Unwind_GetIP(context);
    if (!ip) return _URC_END_OF_STACK;
    /* This library's own frames (the hook, the unwinder's caller) are not the program's. */
    if (t->n == 0 && ip >= own_start && ip < own_end) return _URC_NO_REASON;
    t->ips[t->n++] = ip;
    return t->n == MAX_FRAMES ? _URC_END_OF_STACK : _URC_NO_REASON;
}

/* The slot of the site with this role and stack, made if new (lock held). */
static long site_of(unsigned role, const struct trace *t) {
    uint64_t h = mix(role + 1);
    for (unsigned i = 0; i < t->n; i++) h = mix(h ^ t->ips[i]);
    h |= 2; /* never 0: an empty slot */
    if ((site_count + 1) * 2 > site_cap && !grow_sites()) return -1;
    size_t j = h & (site_cap - 1);
    for (;;) {
        struct site *s = &sites[j];
        if (!s->hash) break;
        if (s->hash == h && s->role == role && s->nframes == t->n &&
            memcmp(frame_pool + s->frames_at, t->ips, t->n * sizeof(uintptr_t)) == 0)
            return (long)j;
        j = (j + 1) & (site_cap - 1);
    }
    uintptr_t *room = frames_room(t->n);
    if (!room) return -1;
    memcpy(room, t->ips, t->n * sizeof(uintptr_t));
    sites[j] = (struct site){.hash = h, .role = role, .nframes = t->n, .frames_at = frame_count};
    frame_count += t->n;
    site_count++;
    return (long)j;
}

static void track(uintptr_t ptr, uint64_t size, uint32_t site, float weight) {
    if ((block_used + 1) * 2 > block_cap && !grow_blocks()) return;
    size_t j = mix(ptr) & (block_cap - 1);
    while (blocks[j].ptr > 1) j = (j + 1) & (block_cap - 1);
    if (blocks[j].ptr == 0) block_used++;
    blocks[j] = (struct block){.ptr = ptr, .size = size, .site = site, .weight = weight};
    block_count++;
}

/* Forget a block (lock held): true when it was known. */
static int untrack(uintptr_t ptr) {
    if (!block_cap) return 0;
    size_t j = mix(ptr) & (block_cap - 1);
    while (blocks[j].ptr) {
        if (blocks[j].ptr == ptr) {
            struct site *s = &sites[blocks[j].site];
            s->live_blocks -= blocks[j].weight;
            s->live_bytes -= (double)blocks[j].weight * (double)blocks[j].size;
            blocks[j].ptr = 1;
            block_count--;
            return 1;
        }
        j = (j + 1) & (block_cap - 1);
    }
    return 0;
}

static void record_alloc(unsigned role, void *ptr, size_t size) {
    if (!ready || finished || !ptr) return;
    double weight = 1.0;
    int sampled = 1;
    if (sample_mean > 0) {
        if (!sampler_started) { /* each thread starts at a random point of the process */
            sampler_started = 1;
            bytes_to_sample = next_gap();
        }
        bytes_to_sample -= (double)(size ? size : 1);
        if (bytes_to_sample > 0) {
            sampled = 0;
        } else {
            while (bytes_to_sample <= 0) bytes_to_sample += next_gap();
            double s = (double)(size ? size : 1);
            weight = 1.0 / (-expm1(-s / sample_mean));
        }
    }
    /* Horvitz-Thompson: a sampled allocation of s bytes chosen with probability p
     * adds (1 - p) (s / p)^2 to the estimate's variance. */
    double variance = 0;
    if (sample_mean > 0 && sampled) {
        double p = 1.0 / weight;
        variance = (1.0 - p) * weight * weight * (double)size * (double)size;
    }
    struct trace t;
    t.n = 0;
    if (sampled) _Unwind_Backtrace(on_frame, &t);
    pthread_mutex_lock(&lock);
    fn_totals[role].calls++;
    fn_totals[role].bytes += size;
    if (sampled) {
        long site = site_of(role, &t);
        if (site >= 0) {
            sites[site].calls += weight;
            sites[site].bytes += weight * (double)size;
            sites[site].bytes_variance += variance;
            sites[site].live_blocks += weight;
            sites[site].live_bytes += weight * (double)size;
            track((uintptr_t)ptr, size, (uint32_t)site, (float)weight);
        }
    }
    pthread_mutex_unlock(&lock);
}

static void record_free(void *ptr) {
    if (!ready || finished || !ptr) return;
    pthread_mutex_lock(&lock);
    size_t j = block_cap ? mix((uintptr_t)ptr) & (block_cap - 1) : 0;
    uint64_t size = 0;
    int known = 0;
    if (block_cap) {
        while (blocks[j].ptr) {
            if (blocks[j].ptr == (uintptr_t)ptr) { size = blocks[j].size; known = 1; break; }
            j = (j + 1) & (block_cap - 1);
        }
    }
    frees++;
    if (known) {
        freed_bytes += size;
        untrack((uintptr_t)ptr);
    } else if (sample_mean > 0) {
        untracked_frees++; /* an unsampled block's free: nothing to match */
    } else {
        unmatched_frees++;
    }
    pthread_mutex_unlock(&lock);
}

static void own_range(void) {
    Dl_info info;
    if (!dladdr((void *)own_range, &info)) return;
    own_start = (uintptr_t)info.dli_fbase;
    own_end = own_start;
    /* The mapped extent of this object: its PT_LOAD segments. */
    struct link_map *lm = 0;
    if (dladdr1((void *)own_range, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
        const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)info.dli_fbase;
        const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
        for (int i = 0; i < eh->e_phnum; i++)
            if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
                uintptr_t end = lm->l_addr + ph[i].p_vaddr + ph[i].p_memsz;
                if (end > own_end) own_end = end;
            }
    }
}

static void write_dump(void);

static void after_fork_in_child(void) {
    /* A new process: its own recording, from nothing (its parent's blocks are its
     * parent's; their frees here count as unmatched). */
    owner = getpid();
    pthread_mutex_init(&lock, 0);
    memset(fn_totals, 0, sizeof fn_totals);
    frees = freed_bytes = unmatched_frees = untracked_frees = 0;
    if (sites) memset(sites, 0, site_cap * sizeof *sites);
    site_count = 0;
    frame_count = 0;
    if (blocks) memset(blocks, 0, block_cap * sizeof *blocks);
    block_count = block_used = 0;
}

static void resolve(void) {
    if (real_malloc || resolving) return;
    resolving = 1;
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_free = dlsym(RTLD_NEXT, "free");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = dlsym(RTLD_NEXT, "memalign");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_valloc = dlsym(RTLD_NEXT, "valloc");
    real_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
    real_execve = dlsym(RTLD_NEXT, "execve");
    real_execvp = dlsym(RTLD_NEXT, "execvp");
    real_execv = dlsym(RTLD_NEXT, "execv");
    resolving = 0;
}

__attribute__((constructor)) static void start(void) {
    in_hook = 1;
    resolve();
    const char *dir = getenv("PERFLAB_ALLOC_DIR");
    if (!dir || strlen(dir) >= sizeof out_dir - 64) { in_hook = 0; return; }
    strcpy(out_dir, dir);
    const char *mean = getenv("PERFLAB_ALLOC_SAMPLE_BYTES");
    sample_mean = mean ? strtod(mean, 0) : 0;
    if (!(sample_mean > 0)) sample_mean = 0;
    own_range();
    /* Load the unwinder's lazily made state now, outside any lock. */
    struct trace t = {.n = 0};
    _Unwind_Backtrace(on_frame, &t);
    pthread_atfork(0, 0, after_fork_in_child);
    owner = getpid();
    pthread_mutex_lock(&lock);
    int ok = grow_sites() && grow_blocks();
    pthread_mutex_unlock(&lock);
    ready = ok;
    in_hook = 0;
}

__attribute__((destructor)) static void stop(void) {
    if (!ready || finished || getpid() != owner) return;
    in_hook = 1;
    write_dump();
    finished = 1;
}

/* Buffered writes to the dump with no allocation. */
struct out { int fd; char buf[65536]; size_t used; };
static void flush(struct out *o) {
    size_t done = 0;
    while (done < o->used) {
        ssize_t n = write(o->fd, o->buf + done, o->used - done);
        if (n <= 0) { if (n < 0 && errno == EINTR) continue; break; }
        done += (size_t)n;
    }
    o->used = 0;
}
static void put(struct out *o, const char *fmt, ...) {
    if (o->used > sizeof o->buf - 512) flush(o);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->used, sizeof o->buf - o->used, fmt, ap);
    va_end(ap);
    if (n > 0) o->used += (size_t)n < sizeof o->buf - o->used ? (size_t)n : sizeof o->buf - o->used - 1;
}

/* The dump, one record a line (perflab's reader: crates/profile/src/alloc/preload.rs):
 *   perflab-alloc 1
 *   pid PID
 *   sample-bytes MEAN                       (0: every allocation unwound)
 *   function NAME CALLS BYTES               (exact, each C-library function; free's calls include free(NULL))
 *   frees FREES FREED_BYTES UNMATCHED UNSAMPLED
 *   site FUNCTION CALLS BYTES LIVE_BLOCKS LIVE_BYTES BYTES_VARIANCE ADDR...
 *                                           (estimates when sampled; return addresses, hex, innermost first)
 *   map START END OFFSET PATH               (every file mapping, from /proc/self/maps)
 *   end
 * The file is written under a temporary name and renamed: a reader never sees half. */
static void write_dump(void) {
    if (!out_dir[0]) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/alloc.%d.%lld%09ld", out_dir, (int)getpid(), (long long)ts.tv_sec, ts.tv_nsec);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    static struct out o;
    o.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (o.fd < 0) return;
    o.used = 0;
    pthread_mutex_lock(&lock);
    put(&o, "perflab-alloc 1\npid %d\nsample-bytes %.17g\n", (int)getpid(), sample_mean);
    for (int r = 0; r < R_COUNT; r++)
        put(&o, "function %s %llu %llu\n", role_names[r], (unsigned long long)fn_totals[r].calls, (unsigned long long)fn_totals[r].bytes);
    put(&o, "frees %llu %llu %llu %llu\n", (unsigned long long)frees, (unsigned long long)freed_bytes,
        (unsigned long long)unmatched_frees, (unsigned long long)untracked_frees);
    for (size_t i = 0; i < site_cap; i++) {
        struct site *s = &sites[i];
        if (!s->hash) continue;
        put(&o, "site %s %.17g %.17g %.17g %.17g %.17g", role_names[s->role], s->calls, s->bytes,
            s->live_blocks < 0 ? 0 : s->live_blocks, s->live_bytes < 0 ? 0 : s->live_bytes, s->bytes_variance);
        for (uint32_t f = 0; f < s->nframes; f++) put(&o, " %lx", (unsigned long)frame_pool[s->frames_at + f]);
        put(&o, "\n");
    }
    pthread_mutex_unlock(&lock);
    int maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (maps >= 0) {
        /* Lines of /proc/self/maps: start-end perms offset dev inode path. */
        static char text[1 << 16];
        char line[4600];
        size_t len = 0;
        ssize_t n;
        while ((n = read(maps, text, sizeof text)) > 0) {
            for (ssize_t i = 0; i < n; i++) {
                if (text[i] != '\n') {
                    if (len < sizeof line - 1) line[len++] = text[i];
                    continue;
                }
                line[len] = 0;
                len = 0;
                unsigned long start, end, offset;
                char perms[8];
                int at = 0;
                if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &start, &end, perms, &offset, &at) >= 4 && at > 0 &&
                    line[at] == '/' && perms[2] == 'x')
                    put(&o, "map %lx %lx %lx %s\n", start, end, offset, line + at);
            }
        }
        close(maps);
    }
    put(&o, "end\n");
    flush(&o);
    close(o.fd);
    if (rename(tmp, path) == 0) strcpy(last_dump, path);
}

/* The hooks. Each passes straight through while the tables are being made, from
 * inside another hook, or after the dump. */
#define ENTER() int outer = !in_hook; if (outer) in_hook = 1
#define LEAVE() if (outer) in_hook = 0

void *malloc(size_t size) {
    if (!real_malloc) {
        if (resolving) { /* dlsym's own allocations, before malloc is known */
            size_t at = (bootstrap_used + 15) & ~(size_t)15;
            if (at + size > sizeof bootstrap) return 0;
            bootstrap_used = at + size;
            return bootstrap + at;
        }
        resolve();
    }
    void *p = real_malloc(size);
    ENTER();
    if (outer) record_alloc(R_MALLOC, p, size);
    LEAVE();
    return p;
}

static int from_bootstrap(void *p) { return (char *)p >= bootstrap && (char *)p < bootstrap + sizeof bootstrap; }

void free(void *p) {
    if (from_bootstrap(p)) return;
    if (!real_free) resolve();
    ENTER();
    if (outer && ready && !finished) {
        /* Every call, free(NULL) too, as a probe on free counts them. */
        pthread_mutex_lock(&lock);
        fn_totals[R_FREE].calls++;
        pthread_mutex_unlock(&lock);
        record_free(p);
    }
    LEAVE();
    if (p) real_free(p);
}

void *calloc(size_t n, size_t size) {
    if (!real_calloc) {
        if (resolving) {
            void *p = malloc(n * size);
            if (p) memset(p, 0, n * size);
            return p;
        }
        resolve();
    }
    void *p = real_calloc(n, size);
    ENTER();
    if (outer) record_alloc(R_CALLOC, p, n * size);
    LEAVE();
    return p;
}

void *realloc(void *old, size_t size) {
    if (!real_realloc) resolve();
    if (from_bootstrap(old)) {
        void *p = real_malloc(size);
        if (p) memcpy(p, old, size < sizeof bootstrap ? size : sizeof bootstrap);
        return p;
    }
    ENTER();
    if (outer && old) record_free(old);
    void *p = real_realloc(old, size);
    if (outer && (p || size == 0)) record_alloc(R_REALLOC, p, size);
    LEAVE();
    return p;
}

/* The allocators that take a size (and an alignment) and return the block. */
#define HOOK(name, role, params, args, size)        \
    void *name params {                             \
        if (!real_##name) resolve();                \
        void *p = real_##name args;                 \
        ENTER();                                    \
        if (outer) record_alloc(role, p, size);     \
        LEAVE();                                    \
        return p;                                   \
    }
HOOK(aligned_alloc, R_ALIGNED_ALLOC, (size_t align, size_t size), (align, size), size)
HOOK(memalign, R_MEMALIGN, (size_t align, size_t size), (align, size), size)

int posix_memalign(void **out, size_t align, size_t size) {
    if (!real_posix_memalign) resolve();
    int rc = real_posix_memalign(out, align, size);
    ENTER();
    if (outer && rc == 0) record_alloc(R_POSIX_MEMALIGN, *out, size);
    LEAVE();
    return rc;
}

HOOK(valloc, R_VALLOC, (size_t size), (size), size)
HOOK(pvalloc, R_PVALLOC, (size_t size), (size), size)

/* An exec replaces this image: its recording is written first (and again, whole,
 * at exit if the exec fails). */
static void before_exec(void) {
    /* A vfork child shares its parent's memory: the tables are the parent's. */
    if (!ready || finished || getpid() != owner) return;
    ENTER();
    last_dump[0] = 0;
    write_dump();
    LEAVE();
}

static int exec_failed(int rc) {
    int saved = errno;
    if (last_dump[0] && getpid() == owner) unlink(last_dump);
    last_dump[0] = 0;
    errno = saved;
    return rc;
}

int execve(const char *path, char *const argv[], char *const envp[]) {
    if (!real_execve) resolve();
    before_exec();
    return exec_failed(real_execve(path, argv, envp));
}

int execvp(const char *file, char *const argv[]) {
    if (!real_execvp) resolve();
    before_exec();
    return exec_failed(real_execvp(file, argv));
}

int execv(const char *path, char *const argv[]) {
    if (!real_execv) resolve();
    before_exec();
    return exec_failed(real_execv(path, argv));
}
