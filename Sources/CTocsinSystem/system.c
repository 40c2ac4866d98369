#include "CTocsinSystem.h"
#include <sys/timerfd.h>
#include <sys/eventfd.h>
#include <time.h>
#include <errno.h>
#include <unistd.h>
#include <string.h>

int tocsin_timerfd_create_realtime(void) {
    return timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
}

int tocsin_timerfd_arm_absolute(int fd, int64_t unix_usec) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    if (unix_usec <= 0) unix_usec = 1; /* zero would disarm: fire as soon as possible instead */
    spec.it_value.tv_sec = (time_t)(unix_usec / 1000000);
    spec.it_value.tv_nsec = (long)((unix_usec % 1000000) * 1000);
    return timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &spec, NULL);
}

int tocsin_timerfd_disarm(int fd) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    return timerfd_settime(fd, 0, &spec, NULL);
}

int64_t tocsin_timerfd_read(int fd) {
    uint64_t n = 0;
    ssize_t r = read(fd, &n, sizeof n);
    if (r == (ssize_t)sizeof n) return (int64_t)n;
    if (r < 0 && errno == EAGAIN) return 0;
    if (r < 0 && errno == ECANCELED) return -1;
    return -2;
}

int tocsin_timerfd_create_alarm(void) {
    int fd = timerfd_create(CLOCK_REALTIME_ALARM, TFD_NONBLOCK | TFD_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

int tocsin_timerfd_arm_alarm(int fd, int64_t unix_usec) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    if (unix_usec > 0) { /* zero disarms */
        spec.it_value.tv_sec = (time_t)(unix_usec / 1000000);
        spec.it_value.tv_nsec = (long)((unix_usec % 1000000) * 1000);
    }
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL) == 0 ? 0 : -errno;
}

int64_t tocsin_timerfd_armed_usec(int fd) {
    struct itimerspec cur;
    if (timerfd_gettime(fd, &cur) != 0) return -errno;
    if (cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0) return 0;
    return tocsin_realtime_usec() + (int64_t)cur.it_value.tv_sec * 1000000 + cur.it_value.tv_nsec / 1000;
}

int tocsin_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int tocsin_eventfd_signal(int fd) {
    uint64_t one = 1;
    return write(fd, &one, sizeof one) == (ssize_t)sizeof one ? 0 : -1;
}

int tocsin_eventfd_drain(int fd) {
    uint64_t n;
    return read(fd, &n, sizeof n) == (ssize_t)sizeof n ? 0 : -1;
}

int64_t tocsin_realtime_usec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#include <malloc.h>

int tocsin_malloc_fix_mmap_threshold(int bytes) {
    return mallopt(M_MMAP_THRESHOLD, bytes);
}

int tocsin_malloc_trim(void) {
    return malloc_trim(0);
}

#include <sys/resource.h>
#include <sys/syscall.h>

int tocsin_thread_set_nice(int nice) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
}
