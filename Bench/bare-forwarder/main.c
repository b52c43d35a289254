/* bare-forwarder: the floor linkcond's userspace engine is measured against.
 *
 *   bare-forwarder [--vnet] IFACE_A IFACE_B      (run inside the namespace that holds both interfaces)
 *
 * Forwards every frame between two interfaces with AF_PACKET and nothing else: one thread per direction,
 * each blocking in recvmmsg (MSG_WAITFORONE: woken per packet, up to 64 frames a call) and sending the
 * batch with one sendmmsg. Receive sockets ignore outgoing frames (PACKET_IGNORE_OUTGOING); send
 * sockets bypass the qdisc (PACKET_QDISC_BYPASS). No impairment, no timers, no statistics. Offloads must
 * already be off on both interfaces and their peers (linkcond-bench does that); frames longer than
 * 2048 bytes are dropped. Prints "ready" once both directions are bound; runs until killed.
 *
 * --vnet: an experiment for the benchmark's ceiling, not a correct wire. Both sockets use
 * PACKET_VNET_HDR, so GSO super-frames (up to 64 KiB) cross whole with their partial checksums; that
 * needs the interfaces' offloads left on, and a frame corrupted on the way would be accepted by the
 * receiver (a partial checksum is trusted, never verified). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { BATCH = 64, PLAIN_SLOT = 2048, VNET_SLOT = 65536 + 128 };

static int vnet;
static size_t slot_size = PLAIN_SLOT;

struct direction {
    int receive_fd;
    int send_fd;
};

static void fail(const char *what, const char *interface) {
    fprintf(stderr, "bare-forwarder: %s %s: %s\n", what, interface, strerror(errno));
    exit(1);
}

static int open_socket(const char *interface, int receive) {
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket for", interface);
    int one = 1, size = 4 << 20;
    if (receive) {
        if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) < 0) fail("PACKET_IGNORE_OUTGOING on", interface);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
    } else {
        if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) < 0) fail("PACKET_QDISC_BYPASS on", interface);
        setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size);
    }
    if (vnet && setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) < 0) fail("PACKET_VNET_HDR on", interface);
    struct sockaddr_ll address = { 0 };
    address.sll_family = AF_PACKET;
    address.sll_protocol = receive ? htons(ETH_P_ALL) : 0;
    address.sll_ifindex = (int)if_nametoindex(interface);
    if (address.sll_ifindex == 0) fail("find", interface);
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) fail("bind to", interface);
    return fd;
}

static void *forward(void *argument) {
    struct direction *direction = argument;
    char *buffers = malloc(BATCH * slot_size);
    if (!buffers) return NULL;
    struct iovec receive_vectors[BATCH], send_vectors[BATCH];
    struct mmsghdr received[BATCH], outgoing[BATCH];
    memset(received, 0, sizeof received);
    memset(outgoing, 0, sizeof outgoing);
    for (int i = 0; i < BATCH; i++) {
        receive_vectors[i] = (struct iovec){ buffers + i * slot_size, slot_size };
        received[i].msg_hdr.msg_iov = &receive_vectors[i];
        received[i].msg_hdr.msg_iovlen = 1;
        outgoing[i].msg_hdr.msg_iov = &send_vectors[i];
        outgoing[i].msg_hdr.msg_iovlen = 1;
    }
    for (;;) {
        int count = recvmmsg(direction->receive_fd, received, BATCH, MSG_WAITFORONE, NULL);
        if (count < 0) {
            if (errno == EINTR || errno == ENETDOWN) continue;
            perror("bare-forwarder: recvmmsg");
            exit(1);
        }
        int queued = 0;
        for (int i = 0; i < count; i++) {
            if (received[i].msg_hdr.msg_flags & MSG_TRUNC) continue;
            send_vectors[queued] = (struct iovec){ buffers + i * slot_size, received[i].msg_len };
            queued++;
        }
        for (int sent = 0; sent < queued;) {
            int result = sendmmsg(direction->send_fd, outgoing + sent, (unsigned)(queued - sent), 0);
            if (result > 0) sent += result;
            else if (errno != EINTR) sent++; /* refused (ENOBUFS, ENETDOWN): drop it */
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--vnet") == 0) {
        vnet = 1;
        slot_size = VNET_SLOT;
        argv++;
        argc--;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: bare-forwarder [--vnet] IFACE_A IFACE_B\n");
        return 2;
    }
    static struct direction directions[2];
    directions[0] = (struct direction){ open_socket(argv[1], 1), open_socket(argv[2], 0) };
    directions[1] = (struct direction){ open_socket(argv[2], 1), open_socket(argv[1], 0) };
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) {
        if (pthread_create(&threads[i], NULL, forward, &directions[i]) != 0) {
            fprintf(stderr, "bare-forwarder: cannot start a thread\n");
            return 1;
        }
    }
    printf("ready\n");
    fflush(stdout);
    pthread_join(threads[0], NULL);
    return 0;
}
