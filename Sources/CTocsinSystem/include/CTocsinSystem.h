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

int tocsin_eventfd_create(void);
int tocsin_eventfd_signal(int fd);
int tocsin_eventfd_drain(int fd);

int64_t tocsin_realtime_usec(void);
#endif
