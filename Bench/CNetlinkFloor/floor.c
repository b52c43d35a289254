#include "CNetlinkFloor.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>

struct mnl_socket *lcfloor_wrap(int fd) { return mnl_socket_fdopen(fd); }

static int count_attribute(const struct nlattr *attribute, void *data) {
    (void)attribute;
    ++*(unsigned *)data;
    return MNL_CB_OK;
}

enum { MAX_BATCH = 64 };

int lcfloor_exchange(struct mnl_socket *socket, uint8_t *batch, size_t length, uint32_t *sequence,
                     void *buffer, size_t capacity, unsigned *replies) {
    uint32_t first = *sequence;
    unsigned count = 0;
    int is_dump[MAX_BATCH];
    int answered[MAX_BATCH];
    int remaining = (int)length;
    for (struct nlmsghdr *request = (struct nlmsghdr *)batch; mnl_nlmsg_ok(request, remaining);
         request = mnl_nlmsg_next(request, &remaining)) {
        if (count == MAX_BATCH) { errno = E2BIG; return -1; }
        request->nlmsg_seq = (*sequence)++;
        /* NLM_F_DUMP shares its bits with NLM_F_REPLACE | NLM_F_EXCL: it means a dump only on RTM_GET*. */
        is_dump[count] = (request->nlmsg_type & 3) == 2 && (request->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
        answered[count] = 0;
        ++count;
    }
    if (mnl_socket_sendto(socket, batch, length) < 0) return -1;
    uint32_t portid = mnl_socket_get_portid(socket);
    unsigned pending = count;
    int first_error = 0;
    unsigned attributes = 0;
    while (pending > 0) {
        ssize_t received = mnl_socket_recvfrom(socket, buffer, capacity);
        if (received < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        int left = (int)received;
        for (struct nlmsghdr *reply = buffer; mnl_nlmsg_ok(reply, left); reply = mnl_nlmsg_next(reply, &left)) {
            uint32_t index = reply->nlmsg_seq - first;
            if (index >= count || answered[index] || (reply->nlmsg_pid != portid && reply->nlmsg_pid != 0)) continue;
            if (reply->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *error = mnl_nlmsg_get_payload(reply);
                if (error->error == 0 && is_dump[index]) continue;
                if (error->error != 0 && first_error == 0) first_error = error->error;
                answered[index] = 1;
                --pending;
            } else if (reply->nlmsg_type == NLMSG_DONE) {
                answered[index] = 1;
                --pending;
            } else if (reply->nlmsg_type >= NLMSG_MIN_TYPE) {
                ++*replies;
                mnl_attr_parse(reply, sizeof(struct tcmsg), count_attribute, &attributes);
            }
        }
    }
    return first_error;
}
