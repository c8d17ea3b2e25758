/*
 * client_statement.c — which query is the statement the client sent.
 *
 * The approximate opt-in approximates only the client's own statement: a
 * query run inside another (a function's, a trigger's, a subplan Citus
 * runs before the outer query) feeds rows to a query whose result the
 * guarantee would have to be about. Hooks on planning, the executor and
 * utility statements tell the GpuSort node (executor.c), as it starts,
 * whether it belongs to that statement.
 *
 * executor_depth counts what nests: planning, ExecutorStart, ExecutorRun, ExecutorFinish
 * and every utility statement but those that start the client's own query
 * (a cursor's, EXPLAIN's, a prepared statement's, CREATE TABLE AS's,
 * COPY (query) TO's). A query started at depth 0 is the client's if its
 * text is the client's statement (simple and extended protocol) or it is
 * the first query such a utility statement starts; not a deferred
 * trigger's at commit, or an event trigger's after a CREATE TABLE AS.
 */
#include "gpusort.h"

#include "executor/executor.h"
#include "optimizer/planner.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"

static int	executor_depth = 0;
static bool utility_starts_client_query = false;	/* not yet started */
static bool starting_client_query = false;	/* its ExecutorStart */
static planner_hook_type previous_planner = NULL;
static ExecutorStart_hook_type previous_executor_start = NULL;
static ExecutorRun_hook_type previous_executor_run = NULL;
static ExecutorFinish_hook_type previous_executor_finish = NULL;
static ProcessUtility_hook_type previous_process_utility = NULL;

/* Whether a node starting now runs in the client's own statement (not in
 * a query nested in it). */
bool
gpusort_in_client_statement(void)
{
	return executor_depth == 1 && starting_client_query;
}

/* Queries run while a plan is made (functions folded into constants) are
 * nested too. */
static PlannedStmt *
gpusort_planner(Query *parse, const char *query_string, int cursor_options,
				ParamListInfo bound_params)
{
	PlannedStmt *result;

	executor_depth++;
	PG_TRY();
	{
		if (previous_planner)
			result = previous_planner(parse, query_string, cursor_options, bound_params);
		else
			result = standard_planner(parse, query_string, cursor_options, bound_params);
	}
	PG_FINALLY();
	{
		executor_depth--;
	}
	PG_END_TRY();
	return result;
}

static void
gpusort_executor_start(QueryDesc *query, int eflags)
{
	if (executor_depth == 0)
	{
		starting_client_query = utility_starts_client_query ||
			(debug_query_string != NULL && query->sourceText != NULL &&
			 strcmp(query->sourceText, debug_query_string) == 0);
		utility_starts_client_query = false;
	}
	executor_depth++;
	PG_TRY();
	{
		if (previous_executor_start)
			previous_executor_start(query, eflags);
		else
			standard_ExecutorStart(query, eflags);
	}
	PG_FINALLY();
	{
		executor_depth--;
	}
	PG_END_TRY();
}

static void
gpusort_executor_run(GPUSORT_EXECUTOR_RUN_ARGS)
{
	executor_depth++;
	PG_TRY();
	{
		if (previous_executor_run)
			previous_executor_run(GPUSORT_EXECUTOR_RUN_PASS);
		else
			standard_ExecutorRun(GPUSORT_EXECUTOR_RUN_PASS);
	}
	PG_FINALLY();
	{
		executor_depth--;
	}
	PG_END_TRY();
}

static void
gpusort_executor_finish(QueryDesc *query)
{
	executor_depth++;
	PG_TRY();
	{
		if (previous_executor_finish)
			previous_executor_finish(query);
		else
			standard_ExecutorFinish(query);
	}
	PG_FINALLY();
	{
		executor_depth--;
	}
	PG_END_TRY();
}

/*
 * Utility statements the client sent that start its own query leave the
 * depth alone and mark the next query started as the client's; any other
 * (DO, CALL, COPY FROM with its triggers, DDL firing event triggers, and
 * every statement a function or trigger runs) counts as a level, so the
 * queries its code runs are nested.
 */
static void
gpusort_process_utility(PlannedStmt *pstmt, const char *query_string, bool read_only_tree,
						ProcessUtilityContext context, ParamListInfo params,
						QueryEnvironment *query_env, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *statement = pstmt->utilityStmt;
	bool		runs_client_query = context == PROCESS_UTILITY_TOPLEVEL &&
		(IsA(statement, DeclareCursorStmt) || IsA(statement, ExplainStmt) ||
		 IsA(statement, ExecuteStmt) || IsA(statement, CreateTableAsStmt) ||
		 (IsA(statement, CopyStmt) && ((CopyStmt *) statement)->query != NULL));

	if (!runs_client_query)
		executor_depth++;
	else if (executor_depth == 0)
		utility_starts_client_query = true;
	PG_TRY();
	{
		if (previous_process_utility)
			previous_process_utility(pstmt, query_string, read_only_tree, context, params,
									 query_env, dest, qc);
		else
			standard_ProcessUtility(pstmt, query_string, read_only_tree, context, params,
									query_env, dest, qc);
	}
	PG_FINALLY();
	{
		if (!runs_client_query)
			executor_depth--;
		else if (executor_depth == 0)
			utility_starts_client_query = false;
	}
	PG_END_TRY();
}

void
gpusort_client_statement_init(void)
{
	previous_planner = planner_hook;
	planner_hook = gpusort_planner;
	previous_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = gpusort_executor_start;
	previous_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = gpusort_process_utility;
	previous_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = gpusort_executor_run;
	previous_executor_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = gpusort_executor_finish;
}
