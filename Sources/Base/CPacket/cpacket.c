#define _GNU_SOURCE
#include "cpacket.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/resource.h>
#include <linux/filter.h>

_Static_assert(sizeof(struct cpk_mmsghdr) == sizeof(struct mmsghdr), "cpk_mmsghdr must match struct mmsghdr");
_Static_assert(offsetof(struct cpk_mmsghdr, msg_len) == offsetof(struct mmsghdr, msg_len), "msg_len offset");

int cpk_recvmmsg(int fd, struct cpk_mmsghdr *messages, unsigned int count, int flags) {
    return recvmmsg(fd, (struct mmsghdr *)messages, count, flags, NULL);
}

int cpk_sendmmsg(int fd, struct cpk_mmsghdr *messages, unsigned int count, int flags) {
    return sendmmsg(fd, (struct mmsghdr *)messages, count, flags);
}

int cpk_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int capacity, int timeout_ms) {
    struct epoll_event ready[8];
    if (capacity > 8) capacity = 8;
    int count = epoll_wait(epfd, ready, capacity, timeout_ms);
    for (int i = 0; i < count; i++) {
        tokens[i] = ready[i].data.u64;
        events[i] = ready[i].events;
    }
    return count;
}

int cpk_thread_cpu_time(uint64_t *user_ns, uint64_t *system_ns) {
    struct rusage usage;
    if (getrusage(RUSAGE_THREAD, &usage) < 0) return -1;
    *user_ns = (uint64_t)usage.ru_utime.tv_sec * 1000000000ull + (uint64_t)usage.ru_utime.tv_usec * 1000ull;
    *system_ns = (uint64_t)usage.ru_stime.tv_sec * 1000000000ull + (uint64_t)usage.ru_stime.tv_usec * 1000ull;
    return 0;
}

static void name_request(struct ifreq *request, const char *ifname) {
    memset(request, 0, sizeof *request);
    strncpy(request->ifr_name, ifname, IFNAMSIZ - 1);
}

int cpk_interface_index(int fd, const char *ifname) {
    struct ifreq request;
    name_request(&request, ifname);
    if (ioctl(fd, SIOCGIFINDEX, &request) < 0) return -1;
    return request.ifr_ifindex;
}

int cpk_interface_mtu(int fd, const char *ifname) {
    struct ifreq request;
    name_request(&request, ifname);
    if (ioctl(fd, SIOCGIFMTU, &request) < 0) return -1;
    return request.ifr_mtu;
}

static int ethtool(int fd, const char *ifname, void *data) {
    struct ifreq request;
    name_request(&request, ifname);
    request.ifr_data = data;
    return ioctl(fd, SIOCETHTOOL, &request);
}

int cpk_ethtool_feature_count(int fd, const char *ifname) {
    /* struct ethtool_sset_info ends in a flexible array: one length per set asked for. */
    uint64_t buffer[(sizeof(struct ethtool_sset_info) + sizeof(uint32_t) + 7) / 8] = { 0 };
    struct ethtool_sset_info *request = (struct ethtool_sset_info *)buffer;
    request->cmd = ETHTOOL_GSSET_INFO;
    request->sset_mask = 1ull << ETH_SS_FEATURES;
    int result = ethtool(fd, ifname, request);
    if (result < 0) return result;
    return request->sset_mask ? (int)request->data[0] : 0;
}

int cpk_ethtool_feature_names(int fd, const char *ifname, char *names, uint32_t count) {
    size_t size = sizeof(struct ethtool_gstrings) + (size_t)count * ETH_GSTRING_LEN;
    struct ethtool_gstrings *request = calloc(1, size);
    if (!request) return -1;
    request->cmd = ETHTOOL_GSTRINGS;
    request->string_set = ETH_SS_FEATURES;
    request->len = count;
    int result = ethtool(fd, ifname, request);
    if (result >= 0) memcpy(names, request->data, (size_t)count * ETH_GSTRING_LEN);
    free(request);
    return result;
}

int cpk_ethtool_get_features(int fd, const char *ifname, uint32_t words, uint32_t *available, uint32_t *requested,
                             uint32_t *active, uint32_t *never_changed) {
    size_t size = sizeof(struct ethtool_gfeatures) + words * sizeof(struct ethtool_get_features_block);
    struct ethtool_gfeatures *request = calloc(1, size);
    if (!request) return -1;
    request->cmd = ETHTOOL_GFEATURES;
    request->size = words;
    int result = ethtool(fd, ifname, request);
    if (result >= 0) {
        for (uint32_t i = 0; i < words; i++) {
            available[i] = request->features[i].available;
            requested[i] = request->features[i].requested;
            active[i] = request->features[i].active;
            never_changed[i] = request->features[i].never_changed;
        }
    }
    free(request);
    return result;
}

int cpk_ethtool_set_features(int fd, const char *ifname, uint32_t words, const uint32_t *valid, const uint32_t *requested) {
    size_t size = sizeof(struct ethtool_sfeatures) + words * sizeof(struct ethtool_set_features_block);
    struct ethtool_sfeatures *request = calloc(1, size);
    if (!request) return -1;
    request->cmd = ETHTOOL_SFEATURES;
    request->size = words;
    for (uint32_t i = 0; i < words; i++) {
        request->features[i].valid = valid[i];
        request->features[i].requested = requested[i];
    }
    int result = ethtool(fd, ifname, request);
    free(request);
    return result;
}

uint32_t cpk_checksum_add(const void *data, size_t length, uint32_t initial) {
    const uint8_t *bytes = data;
    uint64_t sum = initial;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        uint64_t before = sum;
        sum += word;
        sum += sum < before; /* end-around carry */
        bytes += 8;
        length -= 8;
    }
    /* Ones' complement sums are byte-order independent when folded consistently: the 64-bit sum of
     * native-order words folds to the same 16-bit result as a sum of network-order 16-bit words
     * read natively. Fold to 33 bits first so the tail cannot overflow. */
    sum = (sum & 0xffffffffull) + (sum >> 32);
    sum = (sum & 0xffffffffull) + (sum >> 32);
    while (length >= 2) {
        uint16_t half;
        memcpy(&half, bytes, 2);
        sum += half;
        bytes += 2;
        length -= 2;
    }
    if (length) {
        uint16_t last = 0;
        memcpy(&last, bytes, 1);
        sum += last;
    }
    sum = (sum & 0xffffffffull) + (sum >> 32);
    sum = (sum & 0xffffffffull) + (sum >> 32);
    return (uint32_t)sum;
}

/* PACKET_FANOUT's argument: the group id in the low 16 bits, the type and flags in the high 16. */
static int fanout_setsockopt(int fd, uint16_t id, uint32_t type_flags) {
    uint32_t value = (uint32_t)id | (type_flags << 16);
    return setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &value, sizeof value);
}

int cpk_fanout_create(int fd, uint32_t extra_flags) {
    if (fanout_setsockopt(fd, 0, PACKET_FANOUT_CBPF | PACKET_FANOUT_FLAG_UNIQUEID | extra_flags) < 0) return -1;
    uint32_t value = 0;
    socklen_t length = sizeof value;
    if (getsockopt(fd, SOL_PACKET, PACKET_FANOUT, &value, &length) < 0) return -1;
    if (cpk_fanout_route_to_newest(fd) < 0) return -1;
    return (int)(value & 0xffff);
}

int cpk_fanout_join(int fd, uint16_t id, uint32_t extra_flags) {
    return fanout_setsockopt(fd, id, PACKET_FANOUT_CBPF | extra_flags);
}

/* Sets the group's classic BPF program to `ret #member`, which the kernel takes modulo the group's size. */
static int fanout_route_to(int fd, uint32_t member) {
    struct sock_filter route[] = { BPF_STMT(BPF_RET | BPF_K, member) };
    struct sock_fprog program = { .len = 1, .filter = route };
    return setsockopt(fd, SOL_PACKET, PACKET_FANOUT_DATA, &program, sizeof program);
}

int cpk_fanout_route_to_newest(int fd) { return fanout_route_to(fd, 1); }

int cpk_fanout_route_to_first(int fd) { return fanout_route_to(fd, 0); }

int cpk_socket_shut(int fd) {
    struct sock_filter nothing[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
    struct sock_fprog program = { .len = 1, .filter = nothing };
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program);
}

int cpk_socket_unshut(int fd) {
    int unused = 0; /* the kernel wants an int's worth of argument */
    return setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &unused, sizeof unused);
}
