/* The packet engine's window on the kernel: AF_PACKET, ethtool, timerfd, eventfd, epoll, prctl.
 *
 * Swift cannot import function-like macros, structs with flexible array members, or declarations glibc
 * hides without _GNU_SOURCE (recvmmsg, sendmmsg, struct mmsghdr). This header brings in the uapi headers
 * and exposes the rest as small functions with a cpk_ prefix; the ones that need _GNU_SOURCE or
 * variable-length kernel structs live in cpacket.c. */
#ifndef LINKCOND_CPACKET_H
#define LINKCOND_CPACKET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/prctl.h>
#include <linux/if_packet.h>
#include <linux/if_ether.h>
#include <linux/sockios.h>
#include <linux/ethtool.h>
#include <linux/virtio_net.h>

/* Layout-compatible with glibc's struct mmsghdr (hidden without _GNU_SOURCE); checked in cpacket.c. */
struct cpk_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};

/* recvmmsg(2) / sendmmsg(2). */
int cpk_recvmmsg(int fd, struct cpk_mmsghdr *messages, unsigned int count, int flags);
int cpk_sendmmsg(int fd, struct cpk_mmsghdr *messages, unsigned int count, int flags);

/* prctl(PR_SET_TIMERSLACK, nanoseconds) for the calling thread. */
static inline int cpk_set_timer_slack(unsigned long nanoseconds) {
    return prctl(PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0);
}

/* prctl(PR_SET_NAME): the thread name `top -H` and /proc/PID/task/TID/comm show (15 bytes max). */
static inline int cpk_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

/* epoll_event is packed on x86-64; these keep Swift away from its layout. */
static inline int cpk_epoll_add(int epfd, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event = { .events = events, .data = { .u64 = token } };
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

/* Waits on `epfd`; writes up to `capacity` tokens (and their event masks) of ready descriptors. */
int cpk_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int capacity, int timeout_ms);

/* Arms a CLOCK_MONOTONIC timerfd at an absolute time in nanoseconds (0 disarms). */
static inline int cpk_timerfd_arm_absolute(int fd, uint64_t deadline_ns) {
    struct itimerspec spec = { { 0, 0 }, { (time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull) } };
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, 0);
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t cpk_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

/* CLOCK_REALTIME minus CLOCK_MONOTONIC in nanoseconds, from one CLOCK_REALTIME reading between two
 * CLOCK_MONOTONIC ones (compared with their midpoint; the vDSO answers all three in well under a
 * microsecond): what turns a CLOCK_REALTIME stamp of the kernel's into the engine's CLOCK_MONOTONIC.
 * `*width` is the time between the two monotonic readings: the offset is right to within half of it (a
 * thread preempted between the readings gets a wide one). */
static inline int64_t cpk_realtime_offset_ns(int64_t *width) {
    struct timespec before, wall, after;
    clock_gettime(CLOCK_MONOTONIC, &before);
    clock_gettime(CLOCK_REALTIME, &wall);
    clock_gettime(CLOCK_MONOTONIC, &after);
    int64_t first = (int64_t)before.tv_sec * 1000000000ll + before.tv_nsec;
    int64_t second = (int64_t)after.tv_sec * 1000000000ll + after.tv_nsec;
    *width = second - first;
    return (int64_t)wall.tv_sec * 1000000000ll + wall.tv_nsec - (first + second) / 2;
}

/* setsockopt(SO_TIMESTAMPNS, 1): while the socket is open, the kernel stamps every received frame as it
 * queues it (netif_rx), which a TPACKET ring then reports (TP_STATUS_TS_SOFTWARE). 0 or -1 with errno. */
static inline int cpk_enable_receive_stamps(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
}

/* TPACKET_V2 ring geometry from <linux/if_packet.h>, whose function-like macros Swift cannot import. */
/* TPACKET_ALIGN(length): `length` rounded up to TPACKET_ALIGNMENT (16). */
static inline size_t cpk_tpacket_align(size_t length) {
    return TPACKET_ALIGN(length);
}
/* TPACKET_ALIGNMENT: what ring frames and their parts are aligned to. */
static inline size_t cpk_tpacket_alignment(void) {
    return TPACKET_ALIGNMENT;
}
/* TPACKET2_HDRLEN: the aligned struct tpacket2_hdr followed by a struct sockaddr_ll, the part of every
 * frame before the kernel's own padding (af_packet.c sets po->tp_hdrlen to it for TPACKET_V2). */
static inline size_t cpk_tpacket2_hdrlen(void) {
    return TPACKET2_HDRLEN;
}
/* Where a frame's struct sockaddr_ll starts: right after the aligned header (tpacket_rcv writes it at
 * h.raw + TPACKET_ALIGN(sizeof(struct tpacket2_hdr))). */
static inline size_t cpk_tpacket2_address_offset(void) {
    return TPACKET_ALIGN(sizeof(struct tpacket2_hdr));
}

/* tp_status of a TPACKET_V2 ring frame, read with acquire and written with release ordering: the kernel
 * and the reader hand each frame back and forth through it. */
static inline uint32_t cpk_ring_status(const void *frame) {
    return __atomic_load_n((const uint32_t *)frame, __ATOMIC_ACQUIRE);
}
static inline void cpk_ring_release(void *frame) {
    __atomic_store_n((uint32_t *)frame, (uint32_t)TP_STATUS_KERNEL, __ATOMIC_RELEASE);
}

/* A fanout group of packet sockets (PACKET_FANOUT) whose one classic BPF program sends every frame to the
 * member that joined last: `ret #1` modulo the number of members is member 1 of two (the newcomer) and
 * member 0 of one. A receive ring is handed over to a larger one without losing or repeating a frame: the
 * new socket is opened shut (cpk_socket_shut: bound, it would take every frame beside the group until it
 * joins), the program is set to the first member, the new socket joins and is unshut, the program is set
 * to the newest (which waits for every frame already on its way, through synchronize_net), and the old
 * ring is read to its end and closed.
 *
 * Creates a group (type PACKET_FANOUT_CBPF, an id the kernel chooses: PACKET_FANOUT_FLAG_UNIQUEID) with `fd`
 * as its only member and returns the group's id, or -1 with errno. `fd` must be bound. */
int cpk_fanout_create(int fd, uint32_t extra_flags);
/* Joins `fd` (bound to the same interface and protocol) to group `id` made by cpk_fanout_create; 0 or -1. */
int cpk_fanout_join(int fd, uint16_t id, uint32_t extra_flags);
/* (Re)sets the group's program to "the newest member" (PACKET_FANOUT_DATA); returns once frames already
 * being delivered under the old program have arrived. 0 or -1 with errno. */
int cpk_fanout_route_to_newest(int fd);
/* Sets the group's program to "the first member" (the oldest of two), as cpk_fanout_route_to_newest does. */
int cpk_fanout_route_to_first(int fd);
/* Lets no frame into the packet socket `fd` (a socket filter that keeps nothing: SO_ATTACH_FILTER), frames
 * the group sends it included; 0 or -1 with errno. */
int cpk_socket_shut(int fd);
/* Takes the filter of cpk_socket_shut away (SO_DETACH_FILTER); 0 or -1 with errno. */
int cpk_socket_unshut(int fd);

/* A pause hint for spin loops. */
static inline void cpk_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* getrusage(RUSAGE_THREAD): the calling thread's user and system CPU time in nanoseconds. */
int cpk_thread_cpu_time(uint64_t *user_ns, uint64_t *system_ns);

/* SIOCGIFINDEX / SIOCGIFMTU for an interface of the namespace `fd` belongs to; -1 with errno on failure. */
int cpk_interface_index(int fd, const char *ifname);
int cpk_interface_mtu(int fd, const char *ifname);

/* ethtool over SIOCETHTOOL on any socket of the interface's namespace. All return the ioctl's result
 * (-1 with errno set on failure). */

/* The number of feature names (ETH_SS_FEATURES), from ETHTOOL_GSSET_INFO. */
int cpk_ethtool_feature_count(int fd, const char *ifname);
/* ETHTOOL_GSTRINGS for ETH_SS_FEATURES: `count` names of ETH_GSTRING_LEN (32) bytes each into `names`. */
int cpk_ethtool_feature_names(int fd, const char *ifname, char *names, uint32_t count);
/* ETHTOOL_GFEATURES: `words` 32-bit words of each bitmap (bit i of word i/32 is feature i). */
int cpk_ethtool_get_features(int fd, const char *ifname, uint32_t words, uint32_t *available, uint32_t *requested,
                             uint32_t *active, uint32_t *never_changed);
/* ETHTOOL_SFEATURES: sets the features marked in `valid` to the bits in `requested`. A positive result
 * carries ETHTOOL_F_* flags (some requests could not be honoured as asked). */
int cpk_ethtool_set_features(int fd, const char *ifname, uint32_t words, const uint32_t *valid, const uint32_t *requested);

/* The ones' complement sum of `length` bytes starting at `data`, added to `initial` (not folded, not inverted):
 * the building block of Internet checksums (RFC 1071). */
uint32_t cpk_checksum_add(const void *data, size_t length, uint32_t initial);

/* Folds a 32-bit ones' complement sum to 16 bits and inverts it: the value that goes in a checksum field
 * (network byte order when the sum was taken over network-order data). */
static inline uint16_t cpk_checksum_finish(uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

#endif
