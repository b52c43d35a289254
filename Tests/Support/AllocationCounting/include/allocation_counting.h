/* Counts heap allocations per thread, for tests that check a code path allocates nothing.
 *
 * Linked into the test executable, this target replaces malloc, calloc, realloc, free and the aligned
 * allocators for the whole process (glibc supports replacing them by ELF symbol interposition, see
 * "Replacing malloc" in its manual); each forwards to glibc's own (__libc_malloc and friends) after
 * counting on the calling thread. Only the calling thread's counts are read, so other threads of the test
 * process (XCTest's, Dispatch's) do not disturb a measurement. Never link it into a product. */
#ifndef LINKCOND_ALLOCATION_COUNTING_H
#define LINKCOND_ALLOCATION_COUNTING_H

#include <stdint.h>

/* Allocations (malloc, calloc, realloc of NULL or to a new block, posix_memalign, aligned_alloc, memalign,
 * valloc, pvalloc) the calling thread has made since it started. */
uint64_t lc_thread_allocations(void);

/* Blocks the calling thread has freed (free of a non-NULL pointer, realloc that moved or freed). */
uint64_t lc_thread_frees(void);

#endif
