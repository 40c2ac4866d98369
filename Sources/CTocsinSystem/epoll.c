#include "CTocsinSystem.h"
#include <sys/epoll.h>
#include <errno.h>
#include <time.h>

/* struct epoll_event is packed on x86-64, which Swift imports awkwardly: keep it on the C side. */

int tocsin_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static int tocsin_epoll_ctl(int epfd, int op, int fd, uint32_t events) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = 0;
    ev.data.fd = fd;
    return epoll_ctl(epfd, op, fd, &ev);
}

int tocsin_epoll_add(int epfd, int fd, uint32_t events) { return tocsin_epoll_ctl(epfd, EPOLL_CTL_ADD, fd, events); }
int tocsin_epoll_modify(int epfd, int fd, uint32_t events) { return tocsin_epoll_ctl(epfd, EPOLL_CTL_MOD, fd, events); }
int tocsin_epoll_remove(int epfd, int fd) { return tocsin_epoll_ctl(epfd, EPOLL_CTL_DEL, fd, 0); }

int tocsin_epoll_wait(int epfd, int *fds, uint32_t *events, int capacity, int timeout_ms) {
    struct epoll_event evs[64];
    if (capacity > 64) capacity = 64;
    int n;
    do {
        n = epoll_wait(epfd, evs, capacity, timeout_ms);
    } while (n < 0 && errno == EINTR);
    for (int i = 0; i < n; i++) {
        fds[i] = evs[i].data.fd;
        events[i] = evs[i].events;
    }
    return n;
}

int64_t tocsin_monotonic_msec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
