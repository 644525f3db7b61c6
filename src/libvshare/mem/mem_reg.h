/*
 * The registry of memory the shim accounts for: converted (managed)
 * allocations and pinned ones (VMM, or device memory when conversion is
 * off), keyed by address or VMM handle, with the per-device totals that
 * make up this process's footprint. Thread-safe; no CUDA calls, so unit
 * tests drive it directly.
 */
#ifndef VSHARE_MEM_REG_H
#define VSHARE_MEM_REG_H

#include <stddef.h>
#include <stdint.h>

#define MREG_MAX_DEVS 64

enum mreg_kind { MREG_MANAGED = 0, MREG_PINNED = 1 };
/* Key spaces: device addresses and VMM handles may hold equal numbers. */
enum mreg_ns { MREG_PTR = 0, MREG_VMM = 1 };

struct mreg_entry {
	uint64_t key;
	uint64_t size;
	const void *owner;      /* the context it was allocated in, or NULL */
	int dev;
	unsigned char ns;
	unsigned char kind;
	/* Who allocated it: 0 a synchronous allocation; else a
	 * stream-ordered one, MREG_TAG_CURRENT_POOL (cuMemAllocAsync: the
	 * device's current pool) or the CUmemoryPool handle it named. */
	uint64_t tag;
};

#define MREG_TAG_CURRENT_POOL 1

/*
 * Reserve size bytes of kind on dev before allocating, so that concurrent
 * allocations cannot pass the limit together. limit 0 means none; the
 * limit bounds managed + pinned of the device. 0 or -1 (over the limit).
 */
int  mreg_reserve(int dev, int kind, uint64_t size, uint64_t limit);
void mreg_unreserve(int dev, int kind, uint64_t size);
/* Record a reserved allocation. 0, or -1 when out of memory (the
 * reservation is then undone). */
int  mreg_insert(int ns, uint64_t key, uint64_t size, int dev, int kind,
		 const void *owner);
/* Forget an entry and its bytes. 0 if it was known, -1 if not. */
int  mreg_remove(int ns, uint64_t key, struct mreg_entry *out);
int  mreg_lookup(int ns, uint64_t key, struct mreg_entry *out);
/* Set the tag of a known entry. 0, or -1 if unknown. */
int  mreg_set_tag(int ns, uint64_t key, uint64_t tag);
/* Forget every entry of a device, or of an owner (a context that was
 * destroyed: the driver freed its memory). mreg_drop_owner returns the
 * device of the entries it dropped, -1 if none. */
void mreg_drop_device(int dev);
int  mreg_drop_owner(const void *owner);
void mreg_usage(int dev, uint64_t *managed, uint64_t *pinned);
/* Copy up to max entries of dev and kind; returns how many exist. */
size_t mreg_snapshot(int dev, int kind, struct mreg_entry *out, size_t max);
/* Empty the registry. */
void mreg_reset(void);
/* Fork child: empty registry and a fresh lock, without touching nodes. */
void mreg_atfork_child(void);

#endif
