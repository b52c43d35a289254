/* linkcond's window on libmnl and the kernel's uapi headers.
 *
 * Swift cannot import function-like macros and Glibc hides GNU-only calls unless _GNU_SOURCE is set, so
 * this header brings in the uapi headers the netlink layers need and exposes the rest as small inline
 * functions with a cmnl_ prefix (the prefix avoids clashing with Glibc's own declarations). */
#ifndef LINKCOND_CMNL_SHIM_H
#define LINKCOND_CMNL_SHIM_H

#include <stdint.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/ioctl.h>
#include <linux/nsfs.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if_link.h>
#include <linux/if_addr.h>
#include <linux/if_arp.h>
#include <linux/veth.h>
#include <linux/pkt_sched.h>
#include <linux/pkt_cls.h>
#include <linux/tc_act/tc_mirred.h>
#include <linux/net_namespace.h>
#include <linux/gen_stats.h>

/* Declared by <sched.h> only with _GNU_SOURCE. */
extern int setns(int fd, int nstype);
extern int unshare(int flags);

#ifndef CLONE_NEWNET
#define CLONE_NEWNET 0x40000000
#endif
#ifndef CLONE_NEWNS
#define CLONE_NEWNS 0x00020000
#endif

static inline int cmnl_setns(int fd, int nstype) { return setns(fd, nstype); }
static inline int cmnl_unshare(int flags) { return unshare(flags); }
static inline int cmnl_clone_newnet(void) { return CLONE_NEWNET; }
static inline int cmnl_clone_newns(void) { return CLONE_NEWNS; }
/* The kind of namespace a nsfs descriptor refers to (CLONE_NEWNET for a network namespace), -1 when it is
 * no namespace. */
static inline int cmnl_namespace_type(int fd) { return ioctl(fd, NS_GET_NSTYPE); }

/* libmnl's function-like macros. */
static inline size_t cmnl_align(size_t len) { return MNL_ALIGN(len); }
static inline size_t cmnl_socket_buffer_size(void) { return MNL_SOCKET_BUFFER_SIZE; }
static inline size_t cmnl_nlmsg_hdrlen(void) { return MNL_NLMSG_HDRLEN; }
static inline size_t cmnl_attr_hdrlen(void) { return MNL_ATTR_HDRLEN; }

/* <linux/netlink.h> macros used when walking replies. */
static inline uint16_t cmnl_nla_type_mask(void) { return NLA_TYPE_MASK; }

/* <linux/pkt_sched.h> handle helpers. */
static inline uint32_t cmnl_tc_h_make(uint32_t maj, uint32_t min) { return TC_H_MAKE(maj << 16, min); }
static inline uint32_t cmnl_tc_h_root(void) { return TC_H_ROOT; }

#endif
