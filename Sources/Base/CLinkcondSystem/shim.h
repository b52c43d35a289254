/* LinkcondSystem's window on the calls glibc declares only with _GNU_SOURCE, which Swift's Glibc module
 * is built without: accept4(2) and pipe2(2), the forms that set close-on-exec atomically, and renameat2(2),
 * whose RENAME_EXCHANGE swaps two names in one step. Declared here and
 * wrapped in inline functions with an lcsys_ prefix (the prefix avoids clashing with a Glibc that exposes
 * them one day); nothing to link beyond libc. */
#ifndef LINKCOND_SYSTEM_SHIM_H
#define LINKCOND_SYSTEM_SHIM_H

#include <sys/types.h>
#include <sys/socket.h>

extern int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);
extern int pipe2(int fds[2], int flags);

/* accept4(2): accepts a connection, the new descriptor's flags (SOCK_CLOEXEC, SOCK_NONBLOCK) set at once. */
static inline int lcsys_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
    return accept4(fd, address, length, flags);
}

/* pipe2(2): a pipe whose two ends get `flags` (O_CLOEXEC, O_NONBLOCK) at once. */
static inline int lcsys_pipe2(int fds[2], int flags) { return pipe2(fds, flags); }

extern int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags);

/* renameat2(2) with RENAME_EXCHANGE (2, <linux/fs.h>): `first` and `second` (relative to the working
 * directory, or absolute) swap the files they name, atomically; both must exist. */
static inline int lcsys_rename_exchange(const char *first, const char *second) {
    return renameat2(-100 /* AT_FDCWD */, first, -100, second, 2 /* RENAME_EXCHANGE */);
}

#endif
