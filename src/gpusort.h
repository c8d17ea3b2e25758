/*
 * gpusort.h — what the PostgreSQL glue files (src/) share. They reach the
 * sort engine through engine/gpusort_engine.h and the GPU service through
 * service/service.h, and never touch CUDA: only gpusort-gpud does. (The
 * service's client and worker include postgres.h too; the engine, the
 * kernels and gpud do not.)
 *
 * Prototypes are grouped by the file that defines them.
 */
#ifndef GPUSORT_H
#define GPUSORT_H

#include "postgres.h"

#include "compat.h"				/* what differs between PostgreSQL 15 and 18 */
#include "gpusort_engine.h"
#include "nodes/extensible.h"
#include "nodes/pg_list.h"

/* ---- settings.c: settings (GUCs under the reserved prefix "gpusort.") ---- */
extern void gpusort_define_settings(void);
extern bool gpusort_enabled;
extern int	gpusort_device;			/* a gs_device */
extern int	gpusort_algorithm;		/* a gs_algorithm (no approx) */
extern int	gpusort_min_rows;
extern int	gpusort_gpu_min_elements;
extern int	gpusort_gpu_memory_limit_mb;
extern bool gpusort_spill_to_gpu;
extern int	gpusort_approximate_intervals;
extern int	gpusort_approximate_mode;	/* a gs_approx_mode */
extern bool gpusort_explain_details;
extern bool gpusort_parallel_merge;
extern bool gpusort_read_table_pages;

/* ---- errors.c: engine requests, statuses and interruption ---- */
extern void gpusort_request_init(gs_sort_request *request);
extern void gpusort_check_status(gs_status status, const gs_sort_report *report);

/* ---- types.c: SQL types usable as sort keys ---- */
typedef struct GpuSortEnumPlaces GpuSortEnumPlaces;

typedef struct GpuSortType
{
	Oid			type;
	int16		typlen;			/* -1: variable length (read through the slot) */
	bool		byval;
	bool		integral;		/* an integer underneath: exact decode, and
								 * equal-width intervals make sense */
	bool		array_element;	/* the array functions take it (by value,
								 * typlen 2, 4 or 8, with decode) */
	int			nwords;			/* engine key columns one key takes */
	bool		prefix_only;	/* its words may tie where its values do
								 * not: the comparator resolves such ties */
	/* the value's key: one word (nwords 1), or all nwords words, most
	 * significant first, in one call (the value is read once) */
	uint64_t	(*encode) (Datum value);
	void		(*encode_words) (Datum value, uint64_t *words);
	Datum		(*decode) (uint64_t key);	/* array elements only */
	/* a string: all nwords words of its prefix, from its bytes or, under a
	 * collation with sort keys (gpusort_find_key_type()), from its sort
	 * key in `locale` */
	void		(*encode_prefix) (const struct GpuSortType *type, Datum value,
								  uint64_t *words);
	pg_locale_t locale;
	/* an enum: its values' places in its order (gpusort_find_key_type()),
	 * the key gpusort_enum_key() finds */
	GpuSortEnumPlaces *enum_places;
	/*
	 * A string whose prefix the row store narrowed for the rows it holds
	 * (gpusort_prefix_words_for_rows()): only the value's first
	 * prefix_bytes bytes go in, the words after them stay zero, and the
	 * flag stays in the last word's low byte. 0: nwords * 8 - 1 bytes.
	 */
	int			prefix_bytes;
} GpuSortType;

/*
 * A string key's prefix: GPUSORT_PREFIX_WORDS words (15 bytes and the
 * flag) unless the planner saw in the column's statistics that many rows
 * would still tie there, and chose up to GPUSORT_PREFIX_MAX_WORDS.
 */
#define GPUSORT_PREFIX_WORDS 2
#define GPUSORT_PREFIX_MAX_WORDS 4
/*
 * A group of rows tied on their prefix is first put in order by the next
 * GPUSORT_TIE_WORDS words of it, where the type can encode them
 * (tie_resolver.c), so a string key encodes up to GPUSORT_ENCODE_MAX_WORDS.
 */
#define GPUSORT_TIE_WORDS 2
#define GPUSORT_ENCODE_MAX_WORDS (GPUSORT_PREFIX_MAX_WORDS + GPUSORT_TIE_WORDS)

extern const GpuSortType *gpusort_find_type(Oid type);
extern bool gpusort_key_collation_supported(Oid type, Oid collation);
extern const GpuSortType *gpusort_find_key_type(Oid type, Oid collation, int nwords);
extern bool gpusort_prefix_may_widen(const GpuSortType *type);
extern uint64_t gpusort_enum_key(GpuSortEnumPlaces *places, Datum value);
extern Size gpusort_enum_places_size(const GpuSortEnumPlaces *places);
extern void gpusort_enum_places_write(const GpuSortEnumPlaces *places, char *area);
extern void gpusort_enum_places_adopt(GpuSortEnumPlaces *places, const char *area);
extern int	gpusort_prefix_words_for_sample(Oid type, Oid collation, const Datum *common,
											const float4 *common_share, int ncommon,
											const Datum *bounds, int nbounds, int max_words,
											double *tied_share);
extern int	gpusort_prefix_words_for_rows(const uint64_t *keys, size_t nrows, int nwords);
extern const char *gpusort_type_names(bool integral_only);
extern uint64_t gpusort_read_key(const GpuSortType *type, const char *element);
extern void gpusort_write_element(const GpuSortType *type, uint64_t key, char *element);

/* ---- planner.c ---- */
extern void gpusort_planner_init(void);
/* a sort key GpuSort can take, as gpusort_supported_key() found it */
typedef struct GpuSortKeyChoice
{
	Oid			type;			/* the expression's type, a domain's base type */
	const GpuSortType *key_type;
	Oid			sort_operator;	/* the < or > of the family, for the comparator */
	Oid			collation;		/* "C" under a pattern operator */
	bool		descending;
} GpuSortKeyChoice;
extern bool gpusort_supported_key(Oid expr_type, Oid opfamily, int strategy, Oid collation,
								  GpuSortKeyChoice *key);
extern bool gpusort_sort_operator_key(Oid expr_type, Oid sort_operator, Oid collation,
									  GpuSortKeyChoice *key);
extern double gpusort_postgresql_sort_cost(double input_rows, int input_width,
										   double input_total_cost);
extern bool gpusort_replaces_sort(double input_rows, int input_width, double input_total_cost,
								  int nkeys, double sort_cost, bool total);

/* ---- sort_sites.c: the Sorts of a finished plan ---- */
extern void gpusort_sort_sites_init(void);

/* ---- client_statement.c: whether a query is the client's own statement ---- */
extern void gpusort_client_statement_init(void);
extern bool gpusort_in_client_statement(void);

/* ---- executor.c ---- */
extern void gpusort_executor_init(void);
extern Node *gpusort_create_scan_state(CustomScan *cscan);

/* ---- table_pages.c: the table column a scan's target-list entry reads
 * (the planner's estimate and the executor's check agree through it) ---- */
#define TABLE_PAGES_NOT_A_COLUMN (-1)
extern AttrNumber table_pages_column(Expr *expr, Index scanrelid);

/*
 * What the planner hands the executor, in CustomScan.custom_private (a List
 * of Integers; gpusort_plan_info_to_list / _from_list convert).
 *
 * Nothing here may depend on what can change while a plan is cached: the
 * LIMIT is evaluated when the node runs (a generic plan's $1, a stable
 * function), and whether the sort is approximate follows the opt-in as it
 * stands when the node starts.
 */
/*
 * What a GpuSort node does. A parallel sort is two GpuSort nodes with a
 * Gather between them (parallel_sort.c): one below it in every parallel
 * process sorts that process's share of the rows into a shared temporary
 * file and returns no rows; the one above it merges those files.
 */
typedef enum GpuSortRole
{
	GPUSORT_SORT_ALL = 0,		/* sort the child's rows, return them */
	GPUSORT_SORT_SHARE,			/* parallel: sort this process's share to a file */
	GPUSORT_MERGE_SHARES		/* above the Gather: merge the shares' files */
} GpuSortRole;

typedef struct GpuSortPlanInfo
{
	GpuSortRole role;
	int			nkeys;
	/*
	 * Engine key columns: one per SQL sort key, or several for a key whose
	 * type encodes into several words (GpuSortType.nwords), each with the
	 * key's column, type and order and key_part saying which word it holds.
	 */
	AttrNumber	key_attno[GS_MAX_KEY_COLUMNS];	/* in the child's output */
	Oid			key_type[GS_MAX_KEY_COLUMNS];
	int			key_part[GS_MAX_KEY_COLUMNS];
	Oid			sort_operator[GS_MAX_KEY_COLUMNS];
	Oid			collation[GS_MAX_KEY_COLUMNS];
	bool		descending[GS_MAX_KEY_COLUMNS];
	bool		nulls_first[GS_MAX_KEY_COLUMNS];
	int			algorithm;		/* the exact algorithm (a gs_algorithm, not
								 * approx) */
	bool		approx_eligible;	/* the top-level query's one key (an
									 * integer, or a float for the quantile
									 * mode): the approximate opt-in applies
									 * when it is on as the node starts */
	bool		bounded;		/* custom_exprs hold the LIMIT count and the
								 * OFFSET, evaluated when the node first runs */
	/*
	 * Top-N per group (sort_sites.c): the node's parent (a top WindowAgg's
	 * run condition, a Unique) keeps only the first rows of each group of
	 * rows equal on the leading topn_group_columns key columns, so the sort
	 * passes on no others: the first topn_kept rows (GPUSORT_TOPN_ROWS), or
	 * the rows whose rank or dense rank, counted over peers equal on the
	 * next topn_peer_columns key columns, is at most topn_kept.
	 */
	/*
	 * String keys without statistics (bit k: the key whose first word is
	 * column k): the planner gave them the widest prefix it had room for,
	 * and a serial unbounded sort narrows it to what its first rows need
	 * (row_store.c, "a prefix chosen from the rows").
	 */
	uint32		prefix_from_rows;
	int			topn_kind;		/* a GpuSortTopNKind */
	int			topn_kept;
	int			topn_group_columns;
	int			topn_peer_columns;
} GpuSortPlanInfo;

typedef enum GpuSortTopNKind
{
	GPUSORT_TOPN_NONE = 0,
	GPUSORT_TOPN_ROWS,			/* row_number() <= N; a Unique: N = 1 */
	GPUSORT_TOPN_RANK,			/* rank() <= N */
	GPUSORT_TOPN_DENSE_RANK		/* dense_rank() <= N */
} GpuSortTopNKind;

/*
 * Bytes GpuSort keeps per row besides the tuple: its pointer, keys and NULL
 * flags, and the sort's key, index and sorted pointer. The executor counts
 * its memory with it; the planner predicts from it whether the rows will
 * outgrow work_mem.
 */
static inline Size
gpusort_row_overhead(int nkeys)
{
	return sizeof(void *) + nkeys * (sizeof(uint64_t) + 1) +
		sizeof(uint64_t) + sizeof(uint32_t) + sizeof(void *);
}

/* plan_info.c */
extern List *gpusort_plan_info_to_list(const GpuSortPlanInfo *info);
extern void gpusort_plan_info_from_list(List *list, GpuSortPlanInfo *info);
extern bool gpusort_plan_has_prefix_keys(const GpuSortPlanInfo *plan);
extern int	gpusort_plan_key_words(const GpuSortPlanInfo *plan, int k);

/* executor.c */
extern CustomScanMethods gpusort_scan_methods;

/* ---- explain.c ---- */
extern void gpusort_explain(CustomScanState *node, List *ancestors,
							struct ExplainState *es);

#endif							/* GPUSORT_H */
