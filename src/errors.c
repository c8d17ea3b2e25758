/*
 * errors.c — the seam between PostgreSQL and the engine: engine requests
 * filled from the settings, host memory from palloc, cancellation, and
 * engine status codes turned into ereports with a SQLSTATE and a hint.
 *
 * The engine never longjmps. A pending cancel (statement_timeout,
 * pg_cancel_backend, termination) makes the poll function below return
 * true; the engine then stops, frees what it holds (GPU memory included)
 * and returns GS_ERR_INTERRUPTED, and only here, with nothing left to free,
 * does CHECK_FOR_INTERRUPTS() raise the error.
 */
#include "gpusort.h"
#include "service.h"

#include "miscadmin.h"
#include "utils/memutils.h"

static void *
palloc_for_engine(size_t bytes, void *context)
{
	return MemoryContextAllocExtended((MemoryContext) context, bytes,
									  MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

static void
pfree_for_engine(void *pointer, void *context)
{
	(void) context;
	pfree(pointer);
}

static bool
cancel_pending(void *arg)
{
	(void) arg;
	return INTERRUPTS_PENDING_CONDITION() && INTERRUPTS_CAN_BE_PROCESSED() &&
		(QueryCancelPending || ProcDiePending);
}

/* A request carrying the session's settings; the caller fills the data. */
void
gpusort_request_init(gs_sort_request *request)
{
	gs_sort_request_init(request);
	request->device = (gs_device) gpusort_device;
	request->gpu_min_elements = (size_t) gpusort_gpu_min_elements;
	request->gpu_memory_limit = (size_t) gpusort_gpu_memory_limit_mb * 1024 * 1024;
	request->allocator.alloc = palloc_for_engine;
	request->allocator.release = pfree_for_engine;
	request->allocator.context = CurrentMemoryContext;
	request->poll = cancel_pending;
}

/*
 * A sort that ran on the CPU although it could have used the GPU: counted
 * in gpusort_stats, and a WARNING when the GPU failed it. Waiting out
 * gpusort.queue_timeout is the setting doing its job: no warning.
 */
static void
note_fallback(const gs_sort_report *report)
{
	if (report->ran_on != GS_DEVICE_CPU || gpusort_device != GS_DEVICE_AUTO)
		return;
	/* the GPU was never tried (none usable): the client did not count it */
	if (!report->fell_back && report->gpu_status == GS_ERR_GPU_UNAVAILABLE)
		gpu_service_count_fallback(-1, FALLBACK_NO_SERVICE);
	if (report->fell_back && report->gpu_status != GS_ERR_GPU_BUSY)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("GPU sort failed; sorted on the CPU instead"),
				 errdetail("%s", report->gpu_message),
				 errhint("The result is correct. Set gpusort.device = 'cpu' to "
						 "stop using the GPU, or 'gpu' to make this an error.")));
}

/* Raises the error that `status` stands for; warns about a fallback. */
void
gpusort_check_status(gs_status status, const gs_sort_report *report)
{
	switch (status)
	{
		case GS_OK:
			note_fallback(report);
			return;
		case GS_ERR_INTERRUPTED:
			CHECK_FOR_INTERRUPTS();
			/* the poll only stops for a pending cancel or termination */
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("canceling statement due to user request")));
			break;
		case GS_ERR_OUT_OF_MEMORY:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory while sorting")));
			break;
		case GS_ERR_GPU_UNAVAILABLE:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("no usable GPU: %s", report->gpu_message),
					 errhint("Set gpusort.device = 'auto' to sort on the CPU when no GPU "
							 "is usable; SELECT * FROM gpusort_info() shows what was found.")));
			break;
		case GS_ERR_GPU_OUT_OF_MEMORY:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of GPU memory: %s", report->gpu_message),
					 errhint("A superuser can raise gpusort.gpu_memory_limit or "
							 "gpusort.service_memory_budget; or set gpusort.device = 'auto' "
							 "to sort on the CPU when the GPU cannot.")));
			break;
		case GS_ERR_GPU_BUSY:
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("the GPU stayed busy: %s", report->gpu_message),
					 errhint("Raise gpusort.queue_timeout or (a superuser) "
							 "gpusort.service_memory_budget, or set gpusort.device = 'auto' "
							 "to sort on the CPU when the GPU is busy.")));
			break;
		case GS_ERR_GPU_FAILURE:
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("GPU sort failed: %s", report->gpu_message),
					 errhint("Set gpusort.device = 'auto' to fall back to the CPU.")));
			break;
		case GS_ERR_INVALID_ARGUMENT:
			elog(ERROR, "gpusort: the engine rejected a sort request");
			break;
	}
}
