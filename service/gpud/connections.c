/*
 * gpud/connections.c — gpusort-gpud's side of protocol.h: sending and
 * receiving messages (a descriptor passed along), and serving one
 * connection in its own thread from HELLO to its end: the build check,
 * the job's admission (admission.c), then an array job (jobs.c) or a rows
 * job (rows_jobs.c). main.c accepts the connections and checks the
 * peer's user.
 */
#define _GNU_SOURCE
#include "gpud_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A chunked job moves through a slot of this much (or the whole area). */
#define CHUNK_SLOT_BYTES ((uint64_t) 64 << 20)

/* ------------------------------------------------------------------------
 * Connections
 * ------------------------------------------------------------------------ */

/* A whole message, or false at EOF or on a malformed one. A descriptor
 * passed along lands in *passed_fd if that is not NULL (else, and beyond
 * the first, it is closed); -1 if none came. */
static bool
receive_message_fd(int fd, gs_message *message, int *passed_fd)
{
	if (passed_fd != NULL)
		*passed_fd = -1;
	for (;;)
	{
		struct iovec iov = {message, sizeof(*message)};
		struct msghdr header;
		char		control[CMSG_SPACE(4 * sizeof(int))];
		ssize_t		got;

		memset(&header, 0, sizeof(header));
		header.msg_iov = &iov;
		header.msg_iovlen = 1;
		header.msg_control = control;
		header.msg_controllen = sizeof(control);
		got = recvmsg(fd, &header, MSG_CMSG_CLOEXEC);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return false;
		for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(&header); cmsg != NULL;
			 cmsg = CMSG_NXTHDR(&header, cmsg))
			if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS)
			{
				int			count = (int) ((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));

				for (int i = 0; i < count; i++)
				{
					int			received;

					memcpy(&received, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
					if (passed_fd != NULL && *passed_fd < 0)
						*passed_fd = received;
					else
						close(received);
				}
			}
		if (got != (ssize_t) sizeof(*message) || message->magic != GS_SERVICE_MAGIC)
		{
			if (passed_fd != NULL && *passed_fd >= 0)
				close(*passed_fd);
			if (passed_fd != NULL)
				*passed_fd = -1;
			return false;
		}
		return true;
	}
}

bool
receive_message(int fd, gs_message *message)
{
	return receive_message_fd(fd, message, NULL);
}

void
refuse(int fd, gs_refusal refusal, double queue_ms, const char *format,...)
{
	gs_message	reply;
	va_list		args;

	memset(&reply, 0, sizeof(reply));
	reply.type = GS_MSG_REFUSED;
	reply.refusal = refusal;
	reply.queue_ms = queue_ms;
	va_start(args, format);
	vsnprintf(reply.message, sizeof(reply.message), format, args);
	va_end(args);
	gs_send_message(fd, &reply, -1);
}

static bool
valid_job(const gs_message *job)
{
	if (job->n == 0 || job->n >= UINT32_MAX || job->wait_ms < 0)
		return false;
	if (job->kind == GS_JOB_MINMAX)
		return job->key_bytes == 8 && !job->with_index;
	if (job->kind == GS_JOB_ROWS)
		return job->capacity_bytes > 0 && job->capacity_bytes <= service.budget_bytes &&
			job->n <= INT32_MAX && job->nkeys >= 1 && job->nkeys <= GS_ROWS_MAX_KEYS;
	if (job->kind != GS_JOB_SORT && job->kind != GS_JOB_APPROX)
		return false;
	if ((job->key_bytes != 4 && job->key_bytes != 8) || job->key_bits > job->key_bytes * 8)
		return false;
	if (job->kind == GS_JOB_APPROX)
		return job->intervals >= 1 && job->approx_mode <= 1 &&
			(job->approx_mode == 0 || job->intervals <= GS_QUANTILE_MAX_INTERVALS);
	return job->algorithm <= GS_WIRE_RADIX;
}

static void
welcome(int fd)
{
	gs_message	reply;

	memset(&reply, 0, sizeof(reply));
	reply.type = GS_MSG_WELCOME;
	reply.protocol = GS_SERVICE_PROTOCOL;
	snprintf(reply.build, sizeof(reply.build), "%s", service.build);
	reply.device = service.device;
	reply.staging_bytes = service.staging_bytes;
	reply.budget_bytes = service.budget_bytes;
	reply.generation = service.generation;
	reply.emulated = gpud_device->emulated;
	gs_send_message(fd, &reply, service.staging_fd);
}

/* Moves pieces of a chunked job's area through its slot until `until`
 * arrives (RUN after the input, EOF after the output). */
static bool
move_pieces(int fd, char *buffer, uint64_t area_bytes, char *slot, uint64_t slot_bytes,
			gs_message_type until)
{
	gs_message	message;

	for (;;)
	{
		if (!receive_message(fd, &message))
			return until == 0;
		if (message.type == until)
			return true;
		if ((message.type != GS_MSG_PUT && message.type != GS_MSG_GET) ||
			message.length > slot_bytes || message.offset > area_bytes ||
			message.length > area_bytes - message.offset)
			return false;
		if (message.type == GS_MSG_PUT)
			memcpy(buffer + message.offset, slot, message.length);
		else
			memcpy(slot, buffer + message.offset, message.length);
		message.type = GS_MSG_ACK;
		if (!gs_send_message(fd, &message, -1))
			return false;
	}
}

/* ADMITTED: the job's slot (moved through in pieces when chunked), the GPU
 * memory it is counted for, and a shared rows job's token (else 0). */
bool
send_admitted(int fd, const gs_message *job, uint64_t slot_offset, uint64_t slot_bytes,
			  bool chunked, uint64_t gpu_bytes, double queue_ms, uint64_t token)
{
	gs_message	reply = *job;

	reply.type = GS_MSG_ADMITTED;
	reply.slot_offset = slot_offset;
	reply.slot_bytes = slot_bytes;
	reply.chunked = chunked;
	reply.estimate_bytes = gpu_bytes;
	reply.queue_ms = queue_ms;
	reply.token = token;
	return gs_send_message(fd, &reply, -1);
}

void *
serve_connection(void *arg)
{
	int			fd = (int) (intptr_t) arg;
	int			file = -1;
	gs_message	message;
	gs_message	job;
	gs_message	done;
	uint64_t	area_bytes,
				slot_bytes,
				gpu_bytes,
				slot_offset = 0;
	double		queue_ms = 0;
	bool		chunked;
	char	   *buffer = NULL;
	gpu_status	status;

	/* HELLO: the same protocol and the same build, or nothing */
	if (!receive_message(fd, &message) || message.type != GS_MSG_HELLO)
		goto out;
	message.build[sizeof(message.build) - 1] = '\0';
	if (message.protocol != GS_SERVICE_PROTOCOL || strcmp(message.build, service.build) != 0)
	{
		refuse(fd, GS_REFUSED_VERSION, 0,
			   "gpusort-gpud %s (protocol %d) cannot serve gpusort %.60s (protocol %u): "
			   "restart the server after installing a new version of gpusort",
			   service.build, GS_SERVICE_PROTOCOL, message.build, message.protocol);
		goto out;
	}
	welcome(fd);

	/* SUBMIT (a rows job's comes with its file) */
	if (!receive_message_fd(fd, &job, &file) || job.type != GS_MSG_SUBMIT)
		goto out;
	if (job.kind != GS_JOB_ROWS && file >= 0)
	{
		close(file);
		file = -1;
	}
	if (!service.device.usable)
	{
		refuse(fd, GS_REFUSED_NO_GPU, 0, "%s", service.device.reason);
		goto out;
	}
	if (job.kind == GS_JOB_ROWS_ATTACH)
	{
		serve_attach(fd, &job);
		goto out;
	}
	if (!valid_job(&job))
	{
		refuse(fd, GS_REFUSED_BAD_REQUEST, 0, "invalid job");
		goto out;
	}
	area_bytes = gs_job_area_bytes(job.n, job.key_bytes, job.with_index);
	/* the slot holds the whole area, or (chunked) pieces of it; a rows job
	 * moves batches through a slot of its own size */
	chunked = job.kind != GS_JOB_ROWS &&
		area_bytes > service.staging_bytes / SLOT_ALIGN * SLOT_ALIGN;
	if (job.kind == GS_JOB_ROWS)
		slot_bytes = rows_slot_bytes();
	else if (chunked)
		slot_bytes = (service.staging_bytes < CHUNK_SLOT_BYTES ?
					  service.staging_bytes : CHUNK_SLOT_BYTES) / SLOT_ALIGN * SLOT_ALIGN;
	else
		slot_bytes = (area_bytes + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
	gpu_bytes = estimate_gpu_bytes(&job);
	if (gpu_bytes > service.budget_bytes)
	{
		refuse(fd, GS_REFUSED_TOO_LARGE, 0,
			   "the sort needs about %llu MB of GPU memory, more than the service's "
			   "budget of %llu MB (gpusort.service_memory_budget)",
			   (unsigned long long) (gpu_bytes >> 20),
			   (unsigned long long) (service.budget_bytes >> 20));
		goto out;
	}
	if (job.session_memory_limit > 0 && gpu_bytes > job.session_memory_limit)
	{
		refuse(fd, GS_REFUSED_TOO_LARGE, 0,
			   "the sort needs about %llu MB of GPU memory, more than a session may hold "
			   "(gpusort.session_gpu_memory_limit = %llu MB)",
			   (unsigned long long) (gpu_bytes >> 20),
			   (unsigned long long) (job.session_memory_limit >> 20));
		goto out;
	}

	switch (admit(fd, slot_bytes, gpu_bytes, job.session_id, job.session_memory_limit,
				  job.wait_ms, &slot_offset, &queue_ms))
	{
		case ADMIT_GRANTED:
			break;
		case ADMIT_TIMEOUT:
			refuse(fd, GS_REFUSED_QUEUE_TIMEOUT, queue_ms,
				   "waited %.0f ms for GPU memory (gpusort.queue_timeout)", queue_ms);
			goto out;
		default:
			goto out;
	}

	if (job.kind == GS_JOB_ROWS)
	{
		serve_rows(fd, &job, file, slot_offset, slot_bytes, &gpu_bytes, queue_ms);
		file = -1;				/* the job's, closed with it */
		goto done_with_slot;
	}
	if (chunked && (buffer = malloc(area_bytes)) == NULL)
	{
		refuse(fd, GS_REFUSED_OUT_OF_MEMORY, queue_ms,
			   "the service could not allocate %llu MB of host memory for the job",
			   (unsigned long long) (area_bytes >> 20));
		goto done_with_slot;
	}
	if (!send_admitted(fd, &job, slot_offset, slot_bytes, chunked, gpu_bytes, queue_ms, 0))
		goto done_with_slot;
	if (chunked)
	{
		if (!move_pieces(fd, buffer, area_bytes, service.staging + slot_offset, slot_bytes,
						 GS_MSG_RUN))
			goto done_with_slot;
	}
	else if (!receive_message(fd, &message) || message.type != GS_MSG_RUN)
		goto done_with_slot;

	memset(&done, 0, sizeof(done));
	done.type = GS_MSG_DONE;
	status = run_job(&job, chunked ? buffer : service.staging + slot_offset, &fd, &done);
	done.status = wire_status(status);
	done.queue_ms = queue_ms;
	if (status != GPU_OK && done.message[0] == '\0')
		snprintf(done.message, sizeof(done.message), "%s",
				 gpud_device->last_error());
	if (status != GPU_INTERRUPTED)
		gs_send_message(fd, &done, -1);
	if (status != GPU_OK && status != GPU_INTERRUPTED)
		job_failed(status, done.message);
	/* the client reads its results (pieces of them, when chunked), then
	 * closes: only then is the slot free */
	if (chunked)
		move_pieces(fd, buffer, area_bytes, service.staging + slot_offset, slot_bytes, 0);
	else
		while (receive_message(fd, &message))
			;

done_with_slot:
	release(slot_offset, gpu_bytes, job.session_id);
out:
	if (file >= 0)
		close(file);
	free(buffer);
	close(fd);
	__atomic_sub_fetch(&connections_open, 1, __ATOMIC_RELAXED);
	return NULL;
}
