/* The floor linkcond-bench compares linkcond's netlink paths with: the same requests sent with raw libmnl
 * from C, on sockets held open, with the least reading a libmnl program does (mnl_attr_parse over each
 * reply). Nothing in linkcond's products links this. */
#ifndef LINKCOND_CNETLINKFLOOR_H
#define LINKCOND_CNETLINKFLOOR_H

#include <stddef.h>
#include <stdint.h>

struct mnl_socket;

/* Wraps an open, bound netlink socket descriptor (opened elsewhere, e.g. inside a namespace) for libmnl. */
struct mnl_socket *lcfloor_wrap(int fd);

/* Sends the `length` bytes of `batch` — one or more netlink requests laid end to end — in one datagram,
 * after stamping consecutive sequence numbers on them starting at *sequence (which is advanced), then
 * reads until every request is answered: an ack or refusal for a request, NLMSG_DONE for a dump.
 * Returns 0, the negative errno of the first refusal, or -1 with errno set when a system call failed.
 * *replies counts the data messages read (dump entries, echoes). */
int lcfloor_exchange(struct mnl_socket *socket, uint8_t *batch, size_t length, uint32_t *sequence,
                     void *buffer, size_t capacity, unsigned *replies);

#endif
