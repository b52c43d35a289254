#include "allocation_counting.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

/* glibc's own allocator, exported for replacements like this one. */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void __libc_free(void *pointer);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

/* initial-exec: reached without a call into the dynamic linker (which could allocate) from inside malloc. */
static __thread uint64_t allocations __attribute__((tls_model("initial-exec")));
static __thread uint64_t frees __attribute__((tls_model("initial-exec")));

uint64_t lc_thread_allocations(void) { return allocations; }
uint64_t lc_thread_frees(void) { return frees; }

void *malloc(size_t size) {
    allocations++;
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    allocations++;
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    void *result = __libc_realloc(pointer, size);
    if (pointer == NULL) {
        allocations++;
    } else if (size == 0) {
        frees++;
    } else if (result != NULL && result != pointer) {
        allocations++;
        frees++;
    }
    return result;
}

void free(void *pointer) {
    if (pointer != NULL) frees++;
    __libc_free(pointer);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    allocations++;
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
    allocations++;
    return __libc_memalign(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
    allocations++;
    return __libc_memalign(alignment, size);
}

void *valloc(size_t size) {
    allocations++;
    return __libc_valloc(size);
}

void *pvalloc(size_t size) {
    allocations++;
    return __libc_pvalloc(size);
}
