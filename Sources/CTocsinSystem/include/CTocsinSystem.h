#ifndef CTOCSIN_SYSTEM_H
#define CTOCSIN_SYSTEM_H
#include <stdint.h>

/* Glibc's Swift module does not carry sys/timerfd.h; these wrap the calls the scheduler needs. */
int tocsin_timerfd_create_realtime(void);
/* Arms an absolute CLOCK_REALTIME timer that is cancelled (read fails with ECANCELED)
 * when the wall clock is set, so the scheduler notices clock jumps and resume. */
int tocsin_timerfd_arm_absolute(int fd, int64_t unix_usec);
int tocsin_timerfd_disarm(int fd);
/* Returns expirations (>0), 0 for EAGAIN, -1 for a clock change (ECANCELED), -2 other error. */
int64_t tocsin_timerfd_read(int fd);

/* Wake alarms: an absolute timer on CLOCK_REALTIME_ALARM, which brings the machine out of
 * suspend when it expires. Returns the descriptor, or -errno (-EPERM without CAP_WAKE_ALARM,
 * -EINVAL/-EOPNOTSUPP/-ENODEV without an RTC that can wake). Nobody reads it: its expiry only
 * wakes the machine, and the alarm itself fires from the CLOCK_REALTIME timer. */
int tocsin_timerfd_create_alarm(void);
/* Arms it at an absolute CLOCK_REALTIME instant (TFD_TIMER_ABSTIME); 0 or -errno. */
int tocsin_timerfd_arm_alarm(int fd, int64_t unix_usec);
/* When the timer expires, as a CLOCK_REALTIME instant in microseconds read back from the
 * kernel (timerfd_gettime plus the clock now); 0 when disarmed, -errno on error. */
int64_t tocsin_timerfd_armed_usec(int fd);
/* The errno values the wake-alarm fallback reports. */
#define TOCSIN_EPERM 1
#define TOCSIN_ENODEV 19
#define TOCSIN_EINVAL 22
#define TOCSIN_EOPNOTSUPP 95

int tocsin_eventfd_create(void);
int tocsin_eventfd_signal(int fd);
int tocsin_eventfd_drain(int fd);

int64_t tocsin_realtime_usec(void);

/* Fixes glibc's mmap threshold (which otherwise rises to the largest block freed), so large
 * transient buffers such as an oversized D-Bus message go back to the system when freed. It also
 * pins the trim threshold at its default (128 KiB): free memory at the heap's top beyond that is
 * returned at once. */
int tocsin_malloc_fix_mmap_threshold(int bytes);

/* Gives free heap memory back to the system (glibc's malloc_trim): after a reply of many small
 * blocks (a List of 100,000 notifications), and when the store thread goes quiet after work that
 * filled SQLite's page cache, neither of which the mmap threshold covers. */
int tocsin_malloc_trim(void);

/* Sets the nice value of the calling thread only (Linux keeps one per thread). */
int tocsin_thread_set_nice(int nice);

/* epoll for the D-Bus event loop (epoll.c). Events use the EPOLL* bit values below. */
#define TOCSIN_EPOLLIN 0x001u
#define TOCSIN_EPOLLOUT 0x004u
#define TOCSIN_EPOLLERR 0x008u
#define TOCSIN_EPOLLHUP 0x010u
int tocsin_epoll_create(void);
int tocsin_epoll_add(int epfd, int fd, uint32_t events);
int tocsin_epoll_modify(int epfd, int fd, uint32_t events);
int tocsin_epoll_remove(int epfd, int fd);
/* Fills fds/events with up to capacity (max 64) ready descriptors; retries EINTR. */
int tocsin_epoll_wait(int epfd, int *fds, uint32_t *events, int capacity, int timeout_ms);
int64_t tocsin_monotonic_msec(void);
/* Tocsin's global executor (executor.c, LoopExecutor.swift). The hooks hand every job the Swift
 * runtime enqueues to these plain C callbacks; deadlines arrive already converted to
 * CLOCK_MONOTONIC nanoseconds. */
typedef void (*tocsin_job_sink)(void *job);
typedef void (*tocsin_deadline_sink)(void *job, int64_t monotonic_nsec);
/* Installs the enqueueGlobal (jobs to `now`), MainExecutor (to `main`), WithDelay and WithDeadline
 * (to `deadline`) hooks: 0, or -1 if a hook was already taken by someone else (installing ours
 * again is a no-op). */
int tocsin_executor_install_hooks(tocsin_job_sink now, tocsin_job_sink main, tocsin_deadline_sink deadline);
/* Runs a global job on the generic executor (swift_job_run). */
void tocsin_job_run(void *job);
int64_t tocsin_monotonic_nsec(void);
/* A runtime deadline (clock id 1 continuous/BOOTTIME, 2 suspending/MONOTONIC) in MONOTONIC ns. */
int64_t tocsin_deadline_to_monotonic(int swift_clock, int64_t sec, int64_t nsec);
int tocsin_timerfd_create_monotonic(void);
int tocsin_timerfd_arm_absolute_nsec(int fd, int64_t monotonic_nsec);
/* Blocks the signals in the calling thread (threads it creates later inherit the mask). */
int tocsin_block_signals(const int32_t *signals, int count);
/* Blocks the signals in the calling thread and installs a handler that forwards any copy another
 * thread receives (with them unblocked) to the calling thread, which reads them from a signalfd. */
int tocsin_trap_signals(const int32_t *signals, int count);
int tocsin_signalfd_create(const int32_t *signals, int count);
/* The next pending signal's number, 0 when none is pending, -1 on error. */
int tocsin_signalfd_read(int fd);
#endif
