#include "CTocsinSystem.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* The Swift runtime's global-executor hooks (swift/Runtime/ConcurrencyHooks.def). Each hook is a
 * swiftcall function that receives the hooked call's arguments plus the runtime's own
 * implementation; libswift_Concurrency exports one pointer variable per hook and calls through it
 * when it is non-null. Jobs are opaque here: only swift_job_run needs to know what they are. */
#define TOCSIN_SWIFTCALL __attribute__((swiftcall))

typedef struct {
    void *identity;
    uintptr_t implementation;
} tocsin_executor_ref;

typedef TOCSIN_SWIFTCALL void (*enqueue_original)(void *job);
typedef TOCSIN_SWIFTCALL void (*enqueue_hook)(void *job, enqueue_original original);
typedef TOCSIN_SWIFTCALL void (*delay_original)(unsigned long long delay, void *job);
typedef TOCSIN_SWIFTCALL void (*delay_hook)(unsigned long long delay, void *job, delay_original original);
typedef TOCSIN_SWIFTCALL void (*deadline_original)(long long sec, long long nsec, long long tsec,
                                                   long long tnsec, int clock, void *job);
typedef TOCSIN_SWIFTCALL void (*deadline_hook)(long long sec, long long nsec, long long tsec,
                                               long long tnsec, int clock, void *job,
                                               deadline_original original);

extern enqueue_hook swift_task_enqueueGlobal_hook;
extern delay_hook swift_task_enqueueGlobalWithDelay_hook;
extern deadline_hook swift_task_enqueueGlobalWithDeadline_hook;
extern enqueue_hook swift_task_enqueueMainExecutor_hook;

extern TOCSIN_SWIFTCALL void swift_job_run(void *job, tocsin_executor_ref executor);

static tocsin_job_sink now_sink;
static tocsin_job_sink main_sink;
static tocsin_deadline_sink deadline_sink;

/* The runtime's clock ids (SwiftClockId in swift/ExecutorImpl.h). On Linux the runtime reads
 * ContinuousClock from CLOCK_BOOTTIME and SuspendingClock from CLOCK_MONOTONIC (swift_get_time). */
enum { SWIFT_CONTINUOUS_CLOCK = 1, SWIFT_SUSPENDING_CLOCK = 2 };

static int64_t clock_nsec(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t tocsin_monotonic_nsec(void) { return clock_nsec(CLOCK_MONOTONIC); }

static int64_t saturating_add(int64_t a, int64_t b) {
    if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
    return a + b;
}

int64_t tocsin_deadline_to_monotonic(int swift_clock, int64_t sec, int64_t nsec) {
    int64_t at = sec >= INT64_MAX / 1000000000 - 1 ? INT64_MAX
               : sec <= INT64_MIN / 1000000000 + 1 ? INT64_MIN
               : sec * 1000000000 + nsec;
    if (swift_clock != SWIFT_CONTINUOUS_CLOCK) return at;
    /* BOOTTIME runs ahead of MONOTONIC by the time spent suspended. Reading BOOTTIME first
     * underestimates that offset, so the converted deadline can be late by nanoseconds but
     * never early. After a later suspend it is late by the time suspended (see LoopExecutor). */
    int64_t boot = clock_nsec(CLOCK_BOOTTIME);
    int64_t mono = clock_nsec(CLOCK_MONOTONIC);
    return saturating_add(at, -(boot - mono));
}

static TOCSIN_SWIFTCALL void hook_enqueue(void *job, enqueue_original original) {
    (void)original;
    now_sink(job);
}

static TOCSIN_SWIFTCALL void hook_enqueue_main(void *job, enqueue_original original) {
    (void)original;
    main_sink(job);
}

static TOCSIN_SWIFTCALL void hook_delay(unsigned long long delay, void *job, delay_original original) {
    (void)original;
    int64_t d = delay > (unsigned long long)INT64_MAX ? INT64_MAX : (int64_t)delay;
    deadline_sink(job, saturating_add(tocsin_monotonic_nsec(), d));
}

static TOCSIN_SWIFTCALL void hook_deadline(long long sec, long long nsec, long long tsec, long long tnsec,
                                           int clock, void *job, deadline_original original) {
    /* The tolerance is ignored: jobs run as soon as they are due, as with a zero tolerance. */
    (void)tsec; (void)tnsec; (void)original;
    deadline_sink(job, tocsin_deadline_to_monotonic(clock, sec, nsec));
}

static bool claim(void **slot, void *ours) {
    void *expected = NULL;
    if (__atomic_compare_exchange_n(slot, &expected, ours, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return true;
    return expected == ours;
}

int tocsin_executor_install_hooks(tocsin_job_sink now, tocsin_job_sink main, tocsin_deadline_sink deadline) {
    now_sink = now;
    main_sink = main;
    deadline_sink = deadline;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!claim((void **)&swift_task_enqueueGlobal_hook, (void *)hook_enqueue)) return -1;
    if (!claim((void **)&swift_task_enqueueGlobalWithDelay_hook, (void *)hook_delay)) return -1;
    if (!claim((void **)&swift_task_enqueueGlobalWithDeadline_hook, (void *)hook_deadline)) return -1;
    if (!claim((void **)&swift_task_enqueueMainExecutor_hook, (void *)hook_enqueue)) return -1;
    return 0;
}

void tocsin_job_run(void *job) {
    tocsin_executor_ref generic = {NULL, 0};
    swift_job_run(job, generic);
}

int tocsin_timerfd_create_monotonic(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

int tocsin_timerfd_arm_absolute_nsec(int fd, int64_t nsec) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    if (nsec <= 0) nsec = 1; /* zero would disarm: fire as soon as possible instead */
    spec.it_value.tv_sec = (time_t)(nsec / 1000000000);
    spec.it_value.tv_nsec = (long)(nsec % 1000000000);
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL);
}

static int fill_set(sigset_t *set, const int32_t *signals, int count) {
    sigemptyset(set);
    for (int i = 0; i < count; i++)
        if (sigaddset(set, signals[i]) != 0) return -1;
    return 0;
}

int tocsin_block_signals(const int32_t *signals, int count) {
    sigset_t set;
    if (fill_set(&set, signals, count) != 0) return -1;
    return pthread_sigmask(SIG_BLOCK, &set, NULL) == 0 ? 0 : -1;
}

/* The thread whose signalfd takes the trapped signals. A thread that unblocks every signal for a
 * moment (swift-subprocess's monitor waits in epoll_pwait with an empty mask) can still be handed
 * a process-directed signal; this handler passes it on to that thread, where it is blocked and
 * so stays pending for the signalfd. Without it the default action (terminate) would run. */
static pthread_t trap_thread;

static void forward_signal(int signo) {
    int saved = errno;
    pthread_kill(trap_thread, signo);
    errno = saved;
}

int tocsin_trap_signals(const int32_t *signals, int count) {
    sigset_t set;
    if (fill_set(&set, signals, count) != 0) return -1;
    trap_thread = pthread_self();
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = forward_signal;
    action.sa_flags = SA_RESTART;
    sigfillset(&action.sa_mask);
    for (int i = 0; i < count; i++)
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    return 0;
}

int tocsin_signalfd_create(const int32_t *signals, int count) {
    sigset_t set;
    if (fill_set(&set, signals, count) != 0) return -1;
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int tocsin_signalfd_read(int fd) {
    struct signalfd_siginfo info;
    ssize_t r;
    do {
        r = read(fd, &info, sizeof info);
    } while (r < 0 && errno == EINTR);
    if (r == (ssize_t)sizeof info) return (int)info.ssi_signo;
    return r < 0 && errno == EAGAIN ? 0 : -1;
}
