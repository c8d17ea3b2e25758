/*
 * gpud/admission.c — gpusort-gpud's admission: which job may have its slot
 * of the staging area and its share of the GPU budget, and when; the
 * queue, each session's cap, and the idle rows jobs' memory (a waiting
 * job may want it back: give_back_wanted()).
 *
 * Admission. A job is admitted with its slot of the staging area and its
 * share of the GPU budget together, never one without the other, and a
 * running sort never waits for anything, so sorts waiting in the queue
 * cannot deadlock. Every job counts against its session's cap
 * (session_memory_limit) as well as the budget; a job that would pass its
 * session's cap waits for the session's own jobs without holding up anyone
 * else. The queue is first come, first served, but for small jobs (at most
 * an eighth of the budget): they pass a job that the budget cannot take yet
 * for HEAD_RESERVE_MS after it came, so a sort of a few thousand keys does
 * not wait behind one that waits for half the GPU; after that the big job
 * waits for no one. A job that would not fit even in an idle service, or
 * in its whole session's cap, is refused at once; one that waits longer
 * than the client allows is refused with GS_REFUSED_QUEUE_TIMEOUT. Waits
 * sleep on poll(2): the client's socket (a cancel) and an eventfd (the
 * grant).
 */
#define _GNU_SOURCE
#include "gpud_int.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define MAX_SLOTS 4096
/* Small jobs pass a job that waits for the budget this long after it came
 * (see the header). */
#define HEAD_RESERVE_MS 2000
#define SMALL_JOB_SHARE 8
/* Sessions with GPU memory at once. */
#define MAX_SESSIONS 4096

/* ------------------------------------------------------------------------
 * Admission: the staging area, the GPU budget and each session's cap
 * ------------------------------------------------------------------------ */

typedef struct Slot
{
	uint64_t	offset;
	uint64_t	bytes;
} Slot;

/* A session's GPU memory: what its admitted jobs are counted for, and how
 * much of that idle rows jobs hold (they would give it back). */
typedef struct Session
{
	int32_t		id;
	uint64_t	used;
	uint64_t	idle;
} Session;

pthread_mutex_t admission_lock = PTHREAD_MUTEX_INITIALIZER;
static Slot slots[MAX_SLOTS];	/* taken slots, by offset */
int			nslots = 0;
static Session sessions[MAX_SESSIONS];
static int	nsessions = 0;
uint64_t budget_used = 0;
static uint64_t idle_total = 0;	/* of budget_used, held by idle rows jobs */
Waiter *queue_head = NULL;
static Waiter *queue_tail = NULL;

/* The session's entry (made if `create`), or NULL. Lock held. */
static Session *
session_of(int32_t id, bool create)
{
	for (int i = 0; i < nsessions; i++)
		if (sessions[i].id == id)
			return &sessions[i];
	if (!create || nsessions == MAX_SESSIONS)
		return NULL;
	sessions[nsessions].id = id;
	sessions[nsessions].used = 0;
	sessions[nsessions].idle = 0;
	return &sessions[nsessions++];
}

static uint64_t
session_used(int32_t id)
{
	Session    *session = session_of(id, false);

	return session != NULL ? session->used : 0;
}

/* Counts `bytes` more (or, negative, fewer) for the session. Lock held. */
static void
session_charge(int32_t id, int64_t bytes)
{
	Session    *session = session_of(id, bytes > 0);

	if (session == NULL)
		return;
	session->used += (uint64_t) bytes;
	if (session->used == 0 && session->idle == 0)
		*session = sessions[--nsessions];
}

/* First fit in the staging area for `bytes` (a multiple of SLOT_ALIGN);
 * false when no gap is large enough. */
static bool
slot_take(uint64_t bytes, uint64_t *offset)
{
	uint64_t	start = 0;
	int			i;

	if (nslots == MAX_SLOTS)
		return false;
	for (i = 0; i <= nslots; i++)
	{
		uint64_t	end = i < nslots ? slots[i].offset : service.staging_bytes;

		if (end >= start && end - start >= bytes)
			break;
		if (i < nslots)
			start = slots[i].offset + slots[i].bytes;
	}
	if (i > nslots)
		return false;
	memmove(&slots[i + 1], &slots[i], (nslots - i) * sizeof(Slot));
	slots[i].offset = start;
	slots[i].bytes = bytes;
	nslots++;
	*offset = start;
	return true;
}

static void
slot_give_back(uint64_t offset)
{
	for (int i = 0; i < nslots; i++)
		if (slots[i].offset == offset)
		{
			memmove(&slots[i], &slots[i + 1], (nslots - i - 1) * sizeof(Slot));
			nslots--;
			return;
		}
}

static bool
fits_session(const Waiter *w)
{
	return w->session_limit == 0 || w->gpu_bytes == 0 ||
		session_used(w->session) + w->gpu_bytes <= w->session_limit;
}

static bool
fits_budget(const Waiter *w)
{
	return budget_used + w->gpu_bytes <= service.budget_bytes;
}

/*
 * Grants the waiting jobs that may go now, in queue order: each that fits
 * its session's cap, the budget and a slot, unless a job before it waits
 * for the budget (or a slot) and has the right of way (see the header).
 * Lock held.
 */
static void
grant_waiters(void)
{
	Waiter	  **link = &queue_head;
	Waiter	   *previous = NULL;
	const Waiter *reserving = NULL;
	double		now = now_ms();

	while (*link != NULL)
	{
		Waiter	   *w = *link;
		uint64_t	one = 1;
		bool		may_pass = reserving == NULL ||
			(w->gpu_bytes <= service.budget_bytes / SMALL_JOB_SHARE &&
			 now - reserving->enqueued_ms < HEAD_RESERVE_MS);

		if (!fits_session(w))
		{
			/* it waits for its own session: it holds up nobody */
			previous = w;
			link = &w->next;
			continue;
		}
		if (may_pass && fits_budget(w) && slot_take(w->slot_bytes, &w->slot_offset))
		{
			budget_used += w->gpu_bytes;
			if (w->gpu_bytes > 0)
				session_charge(w->session, (int64_t) w->gpu_bytes);
			w->granted = true;
			*link = w->next;
			if (queue_tail == w)
				queue_tail = previous;
			if (write(w->event_fd, &one, sizeof(one)) < 0)
				log_line("eventfd write failed: %s", strerror(errno));
			continue;
		}
		if (reserving == NULL)
			reserving = w;
		previous = w;
		link = &w->next;
	}
}

/* A job ends: its slot, and its GPU memory (what is left of it). */
void
release(uint64_t slot_offset, uint64_t gpu_bytes, int32_t session)
{
	pthread_mutex_lock(&admission_lock);
	slot_give_back(slot_offset);
	budget_used -= gpu_bytes;
	if (gpu_bytes > 0)
		session_charge(session, -(int64_t) gpu_bytes);
	grant_waiters();
	pthread_mutex_unlock(&admission_lock);
}

/* A rows job's GPU memory given back before the job ends (its slot stays). */
void
release_budget(uint64_t gpu_bytes, int32_t session)
{
	release(UINT64_MAX, gpu_bytes, session);
}

/* A rows job's memory becomes idle (it would give it back) or not. */
void
mark_idle(int32_t id, uint64_t gpu_bytes, bool idle)
{
	Session    *session;

	pthread_mutex_lock(&admission_lock);
	session = session_of(id, false);
	if (idle)
	{
		idle_total += gpu_bytes;
		if (session != NULL)
			session->idle += gpu_bytes;
	}
	else
	{
		idle_total -= gpu_bytes;
		if (session != NULL)
			session->idle -= gpu_bytes;
	}
	pthread_mutex_unlock(&admission_lock);
}

/*
 * Whether an idle rows job of session `id` should give its memory back: a
 * waiting job would fit once the idle jobs gave theirs — the first that
 * waits for the budget, with every idle job's memory back, or one of the
 * same session that waits for the session's cap, with the session's idle
 * memory back. Lock held by no one.
 */
bool
give_back_wanted(int32_t id)
{
	bool		wanted = false;

	pthread_mutex_lock(&admission_lock);
	for (const Waiter *w = queue_head; w != NULL && !wanted; w = w->next)
	{
		if (w->gpu_bytes == 0)
			continue;
		if (!fits_session(w))
		{
			Session    *session = session_of(w->session, false);

			wanted = w->session == id && session != NULL &&
				session->used - session->idle + w->gpu_bytes <= w->session_limit;
			continue;
		}
		if (!fits_budget(w))
		{
			wanted = budget_used - idle_total + w->gpu_bytes <= service.budget_bytes;
			break;
		}
	}
	pthread_mutex_unlock(&admission_lock);
	return wanted;
}

/* Removes a waiter that gave up; true if it had been granted meanwhile
 * (then its grant must be released or used). Lock held. */
static bool
leave_queue(Waiter *w)
{
	Waiter	  **link = &queue_head;
	Waiter	   *previous = NULL;

	if (w->granted)
		return true;
	while (*link != NULL && *link != w)
	{
		previous = *link;
		link = &(*link)->next;
	}
	if (*link == w)
	{
		*link = w->next;
		if (queue_tail == w)
			queue_tail = previous;
	}
	/* whoever follows may go now */
	grant_waiters();
	return false;
}

/*
 * Waits for a slot and budget, watching the client's socket (a message or
 * EOF while waiting is a cancel) and the wait bound.
 */
admit_result
admit(int client_fd, uint64_t slot_bytes, uint64_t gpu_bytes, int32_t session,
	  uint64_t session_limit, int64_t wait_ms, uint64_t *slot_offset, double *waited_ms)
{
	Waiter		w;
	double		start = now_ms();
	admit_result result = ADMIT_FAILED;

	memset(&w, 0, sizeof(w));
	w.slot_bytes = slot_bytes;
	w.gpu_bytes = gpu_bytes;
	w.session = session;
	w.session_limit = session_limit;
	w.enqueued_ms = start;
	w.event_fd = eventfd(0, EFD_CLOEXEC);
	if (w.event_fd < 0)
		return ADMIT_FAILED;

	pthread_mutex_lock(&admission_lock);
	if (queue_tail != NULL)
		queue_tail->next = &w;
	else
		queue_head = &w;
	queue_tail = &w;
	grant_waiters();
	pthread_mutex_unlock(&admission_lock);

	for (;;)
	{
		struct pollfd fds[2] = {{client_fd, POLLIN, 0}, {w.event_fd, POLLIN, 0}};
		double		left = wait_ms - (now_ms() - start);
		int			ready;

		pthread_mutex_lock(&admission_lock);
		if (w.granted)
		{
			pthread_mutex_unlock(&admission_lock);
			result = ADMIT_GRANTED;
			break;
		}
		pthread_mutex_unlock(&admission_lock);

		ready = poll(fds, 2, left > 0 ? (int) left + 1 : 0);
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0 || (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
		{
			result = ready < 0 ? ADMIT_FAILED : ADMIT_CLIENT_GONE;
			break;
		}
		if (ready == 0)
		{
			result = ADMIT_TIMEOUT;
			break;
		}
	}

	if (result != ADMIT_GRANTED)
	{
		bool		granted;

		pthread_mutex_lock(&admission_lock);
		granted = leave_queue(&w);
		pthread_mutex_unlock(&admission_lock);
		if (granted && result == ADMIT_TIMEOUT)
			result = ADMIT_GRANTED;		/* it came in time after all */
		else if (granted)
			release(w.slot_offset, gpu_bytes, session);
	}
	close(w.event_fd);
	*slot_offset = w.slot_offset;
	*waited_ms = now_ms() - start;
	return result;
}
