/*
 * device_none.c — gpusort-gpud's GPU in a build without CUDA (no nvcc, or
 * WITH_CUDA=no), in device_cuda.c's place: there is none. --count says
 * so, and a process started anyway finds its device unusable and refuses
 * every job (connections.c), so nothing but the count, the probe and
 * last_error is ever called. The service's test mode (device_emulated.c)
 * works in such a build as in any other.
 */
#include "gpud_int.h"

#include <stdio.h>
#include <string.h>

static const char *const no_cuda = "gpusort was built without CUDA (CPU-only build)";

static int
none_count(char *reason, size_t reason_size)
{
	snprintf(reason, reason_size, "%s", no_cuda);
	return 0;
}

static void
none_probe(gs_wire_device *device)
{
	memset(device, 0, sizeof(*device));
	snprintf(device->reason, sizeof(device->reason), "%s", no_cuda);
}

static const char *
none_last_error(void)
{
	return no_cuda;
}

const GpudDevice gpud_cuda_device = {
	.emulated = false,
	.engine_backend = NULL,
	.engine_device = GS_DEVICE_CPU,
	.pins_host_memory = false,
	.count = none_count,
	.probe = none_probe,
	.last_error = none_last_error,
};
