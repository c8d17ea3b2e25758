/*
 * stats.c — gpusort_stats() (the gpusort_stats view) and
 * gpusort_stats_reset(): the GPU service's counters, one row per GPU and a
 * total, read from shared memory (service/service.h).
 */
#include "gpusort.h"
#include "service.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(gpusort_stats);
PG_FUNCTION_INFO_V1(gpusort_stats_reset);

/* Version 1.2's columns; 1.0 and 1.1 declare the function without
 * given_back_jobs. */
#define STATS_COLUMNS 18

static void
add_counters(Datum *values, int *column, const GpuServiceCounters *c, bool with_given_back)
{
	values[(*column)++] = Int64GetDatum((int64) pg_atomic_read_u64((pg_atomic_uint64 *) &c->jobs));
	values[(*column)++] = Int64GetDatum((int64) pg_atomic_read_u64((pg_atomic_uint64 *) &c->rows));
	values[(*column)++] = Int64GetDatum((int64) pg_atomic_read_u64((pg_atomic_uint64 *) &c->bytes_moved));
	values[(*column)++] = Float8GetDatum(pg_atomic_read_u64((pg_atomic_uint64 *) &c->gpu_time_us) / 1000.0);
	values[(*column)++] = Int64GetDatum((int64) pg_atomic_read_u64((pg_atomic_uint64 *) &c->queued_jobs));
	values[(*column)++] = Float8GetDatum(pg_atomic_read_u64((pg_atomic_uint64 *) &c->queue_wait_us) / 1000.0);
	for (int r = 0; r < FALLBACK_REASONS; r++)
		values[(*column)++] =
			Int64GetDatum((int64) pg_atomic_read_u64((pg_atomic_uint64 *) &c->fallbacks[r]));
	values[(*column)++] = Int64GetDatum((int64) pg_atomic_read_u64((pg_atomic_uint64 *) &c->errors));
	if (with_given_back)
		values[(*column)++] =
			Int64GetDatum((int64) pg_atomic_read_u64((pg_atomic_uint64 *) &c->given_back_jobs));
}

/*
 * gpu, state, device_name, jobs, rows, bytes_moved, gpu_time_ms,
 * queued_jobs, queue_wait_ms, fallbacks_no_gpu, fallbacks_queue_timeout,
 * fallbacks_too_large, fallbacks_gpu_error, fallbacks_service_lost, errors,
 * given_back_jobs (1.2 on), restarts, stats_reset
 */
Datum
gpusort_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[STATS_COLUMNS];
	bool		nulls[STATS_COLUMNS];
	int			ngpus;
	int			restarts_total = 0;
	int			column;
	bool		with_given_back;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != STATS_COLUMNS && rsinfo->setDesc->natts != STATS_COLUMNS - 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("gpusort_stats() is declared with %d columns, not those of an "
						"installed gpusort version", rsinfo->setDesc->natts),
				 errhint("Run ALTER EXTENSION gpusort UPDATE.")));
	with_given_back = rsinfo->setDesc->natts == STATS_COLUMNS;
	if (gpu_service == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the gpusort GPU service is not running"),
				 errhint("Add gpusort to shared_preload_libraries and restart the server.")));

	ngpus = gpu_service->ngpus;
	for (int gpu = 0; gpu < ngpus; gpu++)
	{
		GpuServiceGpu *g = &gpu_service->gpus[gpu];
		GpuServiceState state;
		char		name[256];
		int			restarts;

		SpinLockAcquire(&gpu_service->mutex);
		state = g->state;
		strlcpy(name, g->device.name, sizeof(name));
		restarts = g->restarts;
		SpinLockRelease(&gpu_service->mutex);
		restarts_total += restarts;

		memset(nulls, 0, sizeof(nulls));
		column = 0;
		values[column++] = CStringGetTextDatum(psprintf("%d", gpu));
		values[column++] = CStringGetTextDatum(gpu_service_state_name(state));
		if (name[0] != '\0')
			values[column] = CStringGetTextDatum(name);
		else
			nulls[column] = true;
		column++;
		add_counters(values, &column, &g->counters, with_given_back);
		values[column++] = Int64GetDatum(restarts);
		values[column++] = TimestampTzGetDatum(gpu_service->stats_reset);
		Assert(column == rsinfo->setDesc->natts);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	memset(nulls, 0, sizeof(nulls));
	column = 0;
	values[column++] = CStringGetTextDatum("total");
	values[column++] = CStringGetTextDatum(gpu_service_state_name(gpu_service->state));
	nulls[column++] = true;
	add_counters(values, &column, &gpu_service->counters, with_given_back);
	values[column++] = Int64GetDatum(restarts_total);
	values[column++] = TimestampTzGetDatum(gpu_service->stats_reset);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

static void
reset_counters(GpuServiceCounters *c)
{
	pg_atomic_write_u64(&c->jobs, 0);
	pg_atomic_write_u64(&c->rows, 0);
	pg_atomic_write_u64(&c->bytes_moved, 0);
	pg_atomic_write_u64(&c->gpu_time_us, 0);
	pg_atomic_write_u64(&c->queued_jobs, 0);
	pg_atomic_write_u64(&c->queue_wait_us, 0);
	pg_atomic_write_u64(&c->errors, 0);
	pg_atomic_write_u64(&c->given_back_jobs, 0);
	for (int r = 0; r < FALLBACK_REASONS; r++)
		pg_atomic_write_u64(&c->fallbacks[r], 0);
}

/* Zeroes the counters (not the restarts: they describe the processes). */
Datum
gpusort_stats_reset(PG_FUNCTION_ARGS)
{
	if (gpu_service == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the gpusort GPU service is not running"),
				 errhint("Add gpusort to shared_preload_libraries and restart the server.")));
	reset_counters(&gpu_service->counters);
	for (int gpu = 0; gpu < GS_SERVICE_MAX_GPUS; gpu++)
		reset_counters(&gpu_service->gpus[gpu].counters);
	SpinLockAcquire(&gpu_service->mutex);
	gpu_service->stats_reset = GetCurrentTimestamp();
	SpinLockRelease(&gpu_service->mutex);
	PG_RETURN_VOID();
}
