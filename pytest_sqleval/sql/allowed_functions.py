"""The functions a prediction may call, per dialect: reviewed data, not code.

The guard (:mod:`pytest_sqleval.sql.guard`) lets a prediction call a function
only when its name is on the list of its dialect (or the user allowed it with
``allow_functions:`` in the suite or the ini option ``sqleval_allow_functions``).
Every name below was reviewed against the engine's own function list
(SQLite ``PRAGMA function_list``, DuckDB ``duckdb_functions()``, PostgreSQL
``pg_proc``) and is *pure*: it computes a value from its arguments (and the
rows of the query), and it does not read or write files, reach the network,
execute an SQL string, read or change server state or settings, take locks,
sleep, advance sequences or load code.

Format: one or more names per line, lower case; ``#`` starts a comment.
Names are what the engine resolves (PostgreSQL folds unquoted names to lower
case). Keep the families; say why when a well-known function is left out.
To add a function: check it is pure on that engine, add it to its family, and
run ``pytest tests/test_guard_allowlist.py`` (a test refuses any name from the
list of known-dangerous functions there).

Deliberately left out everywhere (the test's deny-list holds these and more):
file and network readers, dynamic SQL (``query``, ``ts_stat``, ``ts_rewrite``,
``query_to_xml``, ``json_execute_serialized_sql``, ...), settings
(``current_setting``, ``set_config``), sequences (``nextval``, ``setval``,
``currval``), locks, sleeps, backend signals, large objects, ``dblink``,
XML functions (libxml parsing; not needed for text-to-SQL), session
variables, random seeds, logging, and the engines' introspection of secrets,
settings, memory and extensions.
"""

from __future__ import annotations

from functools import lru_cache

#: Used for every dialect other than sqlite, duckdb and postgres (and included in those):
#: SQL-standard functions that are pure on any engine.
COMMON = """
# -- syntax written like a call: CAST(x AS t), EXTRACT(f FROM d), TRIM(...), ...
cast try_cast extract trim substring position overlay coalesce nullif greatest least grouping
# -- aggregates
count sum avg min max
stddev stddev_pop stddev_samp variance var_pop var_samp
# -- window functions
row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
# -- arithmetic and math
abs ceil ceiling floor round trunc mod power sqrt exp ln log log10 sign pi
sin cos tan asin acos atan atan2 cot degrees radians
# -- strings
lower upper length char_length character_length octet_length concat replace ltrim rtrim lpad rpad
left right reverse repeat substr
# -- date and time (values only)
current_date current_time current_timestamp localtime localtimestamp
"""

SQLITE = """
# -- core scalar functions (sqlite.org/lang_corefunc.html)
abs char coalesce concat concat_ws format glob hex ifnull iif instr length like likelihood likely
lower ltrim max min nullif octet_length printf quote random randomblob replace round rtrim sign soundex
substr substring trim typeof unhex unicode unlikely upper zeroblob if
# -- math functions (lang_mathfunc.html)
acos acosh asin asinh atan atan2 atanh ceil ceiling cos cosh degrees exp floor ln log log10 log2 mod pi
pow power radians sin sinh sqrt tan tanh trunc
# -- date and time (lang_datefunc.html)
date time datetime julianday unixepoch strftime timediff current_date current_time current_timestamp
# -- aggregates (lang_aggfunc.html)
avg count group_concat string_agg max min sum total median percentile percentile_cont percentile_disc
# -- window functions (windowfunctions.html)
row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
# -- JSON (json1.html): values only; json_set/json_insert/... return a modified copy of their argument
json jsonb json_array jsonb_array json_array_length json_error_position json_extract jsonb_extract
json_insert jsonb_insert json_object jsonb_object json_patch jsonb_patch json_pretty json_remove jsonb_remove
json_replace jsonb_replace json_set jsonb_set json_type json_valid json_quote
json_group_array jsonb_group_array json_group_object jsonb_group_object
# -- JSON and series table-valued functions
json_each jsonb_each json_tree jsonb_tree generate_series
# -- full-text search auxiliary functions (pure ranking of FTS matches)
bm25 highlight snippet
# -- left out: load_extension (loads code), fts3_tokenizer (registers native code), readfile/writefile/edit
#    (shell file I/O), sqlite_log (writes the log), optimize (FTS write), fts5 (internal),
#    changes/total_changes/last_insert_rowid (connection state), sqlite_compileoption_*, sqlite_source_id,
#    sqlite_version (build details), rtreecheck/rtreedepth/rtreenode, matchinfo/offsets (debug), subtype,
#    the pragma_* table-valued functions and sqlite_stmt (refused as relations too: DENIED_RELATIONS).
"""

DUCKDB = """
# -- syntax written like a call and constructors
row array list struct_pack map columns unpack
# -- conditional
if ifnull nvl coalesce nullif greatest least
# -- arithmetic and math
abs acos acosh add asin asinh atan atan2 atanh bit_count cbrt ceil ceiling cos cosh cot degrees divide even
exp factorial floor fmod gamma gcd greatest_common_divisor isfinite isinf isnan lcm least_common_multiple
lgamma ln log log10 log2 mod multiply nextafter pi pow power radians round round_even roundbankers sign signbit
sin sinh sqrt subtract tan tanh trunc xor equi_width_bins fdiv fsum
# -- bits and blobs
bit_length bit_position bitstring get_bit set_bit octet_length encode decode
# -- strings
ascii bar bin char_length character_length chr concat concat_ws contains ends_with starts_with prefix suffix
format printf ilike_escape like_escape not_ilike_escape not_like_escape instr lcase ucase left right left_grapheme
right_grapheme len length length_grapheme lower upper lpad rpad ltrim rtrim trim md5 md5_number md5_number_lower
md5_number_upper sha1 sha256 hash nfc_normalize ord unicode position repeat replace reverse split split_part
str_split string_split string_split_regex str_split_regex string_to_array strip_accents strlen strpos substr
substring substring_grapheme translate url_decode url_encode levenshtein damerau_levenshtein editdist3 hamming
jaccard jaro_similarity jaro_winkler_similarity mismatches base64 to_base64 from_base64 hex unhex unbin to_hex
from_hex to_binary from_binary to_base formatreadablesize formatreadabledecimalsize format_bytes
parse_formatted_bytes overlay
# -- regular expressions
regexp_escape regexp_extract regexp_extract_all regexp_full_match regexp_matches regexp_replace
regexp_split_to_array regexp_split_to_table
# -- date and time
age ago century current_date current_time current_timestamp current_localtime current_localtimestamp
get_current_time get_current_timestamp now today transaction_timestamp localtime localtimestamp
date_add date_diff datediff date_part datepart date_sub datesub date_trunc datetrunc day dayname dayofmonth
dayofweek dayofyear days_in_month decade epoch epoch_ms epoch_ns epoch_us era extract hour isodow isoyear julian
last_day make_date make_time make_timestamp make_timestamp_ms make_timestamp_ns make_timestamptz microsecond
millennium millisecond minute month monthname nanosecond normalized_interval quarter second strftime strptime
try_strptime time_bucket timezone timezone_hour timezone_minute to_centuries to_days to_decades to_hours
to_microseconds to_millennia to_milliseconds to_minutes to_months to_quarters to_seconds to_timestamp to_weeks
to_years week weekday weekofyear year yearweek
# -- casts and types
cast try_cast typeof pg_typeof can_cast_implicitly
# -- enums, unions, structs, maps
enum_code enum_first enum_last enum_range enum_range_boundary union_extract union_tag union_value
struct_concat struct_contains struct_extract struct_extract_at struct_has struct_indexof struct_insert
struct_keys struct_position struct_update struct_values row_to_json
map_concat map_contains map_contains_entry map_contains_value map_entries map_extract map_extract_value
map_from_entries map_keys map_values element_at cardinality
# -- lists and arrays (lambdas are checked like the rest of the query)
apply filter reduce flatten grade_up
array_aggr array_aggregate array_append array_apply array_cat array_concat array_contains array_cosine_distance
array_cosine_similarity array_cross_product array_distance array_distinct array_dot_product array_extract
array_filter array_grade_up array_has array_has_all array_has_any array_indexof array_inner_product
array_intersect array_length array_negative_dot_product array_negative_inner_product array_pop_back
array_pop_front array_position array_prepend array_push_back array_push_front array_reduce array_resize
array_reverse array_reverse_sort array_select array_slice array_sort array_to_json array_to_string
array_transform array_unique array_value array_where array_zip
list_aggr list_aggregate list_any_value list_append list_apply list_approx_count_distinct list_avg list_bit_and
list_bit_or list_bit_xor list_bool_and list_bool_or list_cat list_concat list_contains list_cosine_distance
list_cosine_similarity list_count list_distance list_distinct list_dot_product list_element list_entropy
list_extract list_filter list_first list_grade_up list_has list_has_all list_has_any list_histogram
list_indexof list_inner_product list_intersect list_kurtosis list_kurtosis_pop list_last list_mad list_max
list_median list_min list_mode list_negative_dot_product list_negative_inner_product list_pack list_position
list_prepend list_product list_reduce list_resize list_reverse list_reverse_sort list_select list_sem
list_skewness list_slice list_sort list_stddev_pop list_stddev_samp list_string_agg list_sum list_transform
list_unique list_value list_var_pop list_var_samp list_where list_zip
# -- JSON values (json_execute_serialized_sql, json_serialize_sql, json_deserialize_sql and
#    json_serialize_plan are left out: they read or run SQL)
json json_array json_array_length json_contains json_exists json_extract json_extract_path
json_extract_path_text json_extract_string json_insert json_keys json_merge_patch json_object json_pretty
json_quote json_remove json_replace json_set json_strip_nulls json_structure json_transform
json_transform_strict json_type json_valid json_value from_json from_json_strict to_json
json_group_array json_group_object json_group_structure
# -- identifiers, uuids, randomness (random values are harmless; setseed is left out: it changes session state)
uuid uuidv4 uuidv7 gen_random_uuid uuid_extract_timestamp uuid_extract_version random
current_database current_schema current_schemas current_catalog current_user current_role session_user user
# -- geometry values (core spatial types)
st_asbinary st_asgeojson st_astext st_aswkb st_aswkt st_geomfromgeojson st_geomfromwkb st_intersects_extent
# -- aggregates
any_value approx_count_distinct approx_quantile approx_top_k arbitrary arg_max arg_max_null arg_max_nulls_last
arg_min arg_min_null arg_min_nulls_last argmax argmin array_agg avg bit_and bit_or bit_xor bitstring_agg
bool_and bool_or corr count count_if count_star countif covar_pop covar_samp entropy favg first geomean
geometric_mean group_concat histogram histogram_exact kahan_sum kurtosis kurtosis_pop last list listagg mad
max max_by mean median min min_by mode product quantile quantile_cont quantile_disc regr_avgx regr_avgy
regr_count regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy reservoir_quantile sem skewness stddev
stddev_pop stddev_samp string_agg sum sum_no_overflow sumkahan var_pop var_samp variance weighted_avg wavg
percentile_cont percentile_disc
# -- window functions
row_number rank dense_rank rank_dense percent_rank cume_dist ntile lag lead first_value last_value nth_value fill
# -- table functions that generate values
range generate_series generate_subscripts unnest repeat_row json_each json_tree
# -- catalogue introspection of tables and columns (duckdb_secrets, duckdb_settings, which_secret,
#    duckdb_memory, duckdb_temporary_files, duckdb_extensions, duckdb_logs, duckdb_variables and the
#    pragma_* functions other than table_info are left out)
duckdb_tables duckdb_columns duckdb_views duckdb_schemas duckdb_constraints duckdb_indexes duckdb_types
duckdb_databases duckdb_keywords duckdb_functions pragma_table_info
# -- left out: read_* / *_scan / glob / sniff_csv / parquet_* (files), query / query_table (dynamic SQL),
#    current_setting / getvariable (settings), nextval / currval / setval (sequences), sleep_ms / pg_sleep,
#    write_log, checkpoint / force_checkpoint, enable_* / disable_*, txid_current, current_query,
#    inet_* (network addresses), version, summary (runs a query over a table), invoke, error,
#    __internal_* and the collate_* helpers.
"""

POSTGRES = """
# -- syntax written like a call and constructors
row array
# -- conditional and null handling
coalesce nullif greatest least num_nulls num_nonnulls
# -- math
abs cbrt ceil ceiling degrees div exp factorial floor gcd lcm ln log log10 min_scale mod pi power pow radians
round scale sign sqrt trim_scale trunc width_bucket random random_normal erf erfc gamma lgamma
acos acosd acosh asin asind asinh atan atan2 atan2d atand atanh cos cosd cosh cot cotd sin sind sinh tan tand tanh
# -- strings
ascii bit_length btrim char_length character_length chr concat concat_ws format initcap left length lower lpad
ltrim md5 normalize octet_length overlay parse_ident position quote_ident quote_literal quote_nullable repeat
replace reverse right rpad rtrim split_part starts_with string_to_array string_to_table strpos substr substring
to_ascii to_hex to_bin to_oct translate trim unistr upper casefold
convert convert_from convert_to encode decode sha224 sha256 sha384 sha512 crc32 crc32c
get_bit get_byte set_bit set_byte bit_count
# -- regular expressions
regexp_count regexp_instr regexp_like regexp_match regexp_matches regexp_replace regexp_split_to_array
regexp_split_to_table regexp_substr
# -- formatting
to_char to_date to_number to_timestamp cash_words
# -- date and time
age clock_timestamp current_date current_time current_timestamp localtime localtimestamp date_bin date_part
date_trunc date_add date_subtract extract isfinite justify_days justify_hours justify_interval make_date
make_interval make_time make_timestamp make_timestamptz now statement_timestamp timeofday transaction_timestamp
timezone overlaps
# -- casts written as type-named calls
cast bool bpchar char date float4 float8 int2 int4 int8 interval money name numeric text time timestamp
timestamptz timetz varchar bit varbit inet cidr macaddr macaddr8 uuid pg_typeof format_type
# -- network addresses (values only)
abbrev broadcast family host hostmask inet_merge inet_same_family masklen netmask network set_masklen
# -- geometry (values only)
area box center circle diagonal diameter height width isclosed isopen ishorizontal isvertical isparallel isperp
line lseg npoints path pclose point polygon popen radius slope bound_box
# -- ranges
int4range int8range numrange tsrange tstzrange daterange int4multirange int8multirange nummultirange
tsmultirange tstzmultirange datemultirange multirange lower upper isempty lower_inc upper_inc lower_inf
upper_inf range_merge
# -- arrays
array_append array_cat array_dims array_fill array_length array_lower array_ndims array_position
array_positions array_prepend array_remove array_replace array_to_string array_upper cardinality trim_array
array_sample array_shuffle array_sort array_reverse unnest generate_subscripts
# -- enums, uuids, sizes
enum_first enum_last enum_range gen_random_uuid uuidv4 uuidv7 pg_size_pretty pg_size_bytes
# -- JSON and JSONB (values only; json paths do not run SQL)
array_to_json row_to_json to_json to_jsonb json_build_array json_build_object json_object json_array
json_array_elements json_array_elements_text json_array_length json_each json_each_text json_extract_path
json_extract_path_text json_object_keys json_populate_record json_populate_recordset json_strip_nulls
json_to_record json_to_recordset json_typeof json_scalar json_serialize json_query json_value json_exists
json_table jsonb_array_elements jsonb_array_elements_text jsonb_array_length jsonb_build_array
jsonb_build_object jsonb_each jsonb_each_text jsonb_extract_path jsonb_extract_path_text jsonb_insert
jsonb_object jsonb_object_keys jsonb_path_exists jsonb_path_exists_tz jsonb_path_match jsonb_path_match_tz
jsonb_path_query jsonb_path_query_array jsonb_path_query_array_tz jsonb_path_query_first
jsonb_path_query_first_tz jsonb_path_query_tz jsonb_populate_record jsonb_populate_recordset jsonb_pretty
jsonb_set jsonb_set_lax jsonb_strip_nulls jsonb_to_record jsonb_to_recordset jsonb_typeof
# -- full-text search on values (ts_stat and ts_rewrite are left out: they run an SQL string;
#    ts_debug/ts_parse/ts_lexize are left out: dictionary and parser internals)
to_tsvector to_tsquery plainto_tsquery phraseto_tsquery websearch_to_tsquery ts_rank ts_rank_cd ts_headline
setweight strip numnode querytree ts_delete ts_filter tsvector_to_array array_to_tsvector json_to_tsvector
jsonb_to_tsvector get_current_ts_config
# -- aggregates
array_agg avg bit_and bit_or bit_xor bool_and bool_or every count max min sum string_agg json_agg jsonb_agg
json_object_agg jsonb_object_agg json_arrayagg json_objectagg any_value range_agg range_intersect_agg
corr covar_pop covar_samp regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx regr_sxy
regr_syy stddev stddev_pop stddev_samp variance var_pop var_samp mode percentile_cont percentile_disc
# -- window functions
row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
# -- table functions that generate values
generate_series
# -- identity of the session (no secrets)
current_database current_schema current_schemas current_catalog current_user current_role session_user user
# -- left out: pg_read_file / pg_read_binary_file / pg_ls_* / pg_stat_file (files), lo_* (large objects),
#    dblink* (network), query_to_xml* / cursor_to_xml* / table_to_xml* / schema_to_xml* / database_to_xml*,
#    ts_stat / ts_rewrite (SQL strings), set_config / current_setting, pg_advisory_* / pg_try_advisory_*
#    (locks), pg_stat_* (statistics, resets), pg_backup_*, pg_terminate_backend / pg_cancel_backend,
#    pg_reload_conf, pg_rotate_logfile, pg_switch_wal, pg_sleep*, nextval / setval / currval / lastval,
#    txid_* / pg_current_xact_id* (transaction ids), setseed, inet_client_* / inet_server_*,
#    version, pg_backend_pid, pg_notify, pg_get_* / pg_*_is_visible / has_*_privilege (catalogue internals),
#    every XML function (xml, xmlparse, xpath, ...: libxml parsing), binary_upgrade_*, brin_*.
"""

#: Relations that expose secrets or server state, per dialect: rejected in FROM (unqualified, or
#: qualified by the system schema). Names; a name ending in ``*`` is a prefix.
#: PostgreSQL's pg_roles and pg_user mask passwords, but their rolconfig/useconfig columns show each role's settings
#: (``ALTER ROLE app SET app.jwt_secret = '...'``), as pg_db_role_setting does: refused with it.
DENIED_RELATIONS = {
    "postgres": """
    # -- secrets (pg_roles, pg_user: rolconfig/useconfig hold per-role settings)
    pg_authid pg_shadow pg_user_mapping pg_user_mappings pg_subscription pg_db_role_setting pg_roles pg_user
    # -- server configuration and files
    pg_settings pg_file_settings pg_hba_file_rules pg_ident_file_mappings pg_config
    pg_available_extensions pg_available_extension_versions
    # -- server state and statistics (also column statistics, which hold sample values)
    pg_stat_* pg_statio_* pg_statistic* pg_stats* pg_locks pg_backend_memory_contexts pg_shmem_allocations
    pg_prepared_xacts pg_replication_* pg_largeobject* pg_aios pg_wait_events
    """,
    "sqlite": """
    # -- sqlite_stmt lists the SQL of every statement the connection keeps prepared: the gold SQL of earlier cases
    sqlite_stmt sqlite_dbpage
    # -- the pragma_* table-valued functions read as a table (build options, file paths): refused as calls too
    pragma_*
    """,
    "duckdb": """
    # -- settings (legacy secret settings), logs
    pg_settings duckdb_settings duckdb_secrets duckdb_logs duckdb_memory duckdb_temporary_files duckdb_variables
    """,
}

#: information_schema views that show user-mapping options (passwords) on PostgreSQL.
DENIED_INFORMATION_SCHEMA = {
    "postgres": "user_mapping_options _pg_user_mappings _pg_foreign_servers",
}

#: Functions on a dialect's list that are something else when called as a table (in FROM, LATERAL, PIVOT's
#: source): DuckDB's table macro ``histogram(source, column)`` reads the relation *named* by its first argument
#: through ``query_table`` (a catalogue refused above included: ``histogram('pg_catalog.pg_settings', name)``);
#: the aggregate ``histogram(column)`` stays allowed.
DENIED_TABLE_FUNCTIONS = {
    "duckdb": "histogram",
}

#: Schemas whose functions are the built-in ones, per dialect. A call qualified by another schema is the
#: database's own function and needs ``allow_functions``. ``None``: any qualifier (the engine has no
#: user-defined functions in schemas, or a dotted call is method syntax, as DuckDB's ``x.upper()``).
SYSTEM_SCHEMAS: dict[str, frozenset[str] | None] = {
    "postgres": frozenset({"pg_catalog"}),
    "sqlite": None,
    "duckdb": None,
}

#: PostgreSQL's built-in types that are not composite (``pg_type`` of ``pg_catalog`` and ``information_schema``,
#: PostgreSQL 15, array types aside) and that sqlglot reads as user-defined. ``(value::T).name`` is a field of a row
#: only when T is composite: a table's row type, the database's own (the guard lets such a field through); for these
#: types ``.name`` is a call of ``name(value)`` (``('/etc/passwd'::pg_catalog.text).pg_read_file``).
POSTGRES_BUILTIN_TYPES = frozenset("""
aclitem any anyarray anycompatible anycompatiblearray anycompatiblemultirange anycompatiblenonarray
anycompatiblerange anyelement anyenum anymultirange anynonarray anyrange bit bool box bpchar bytea
cardinal_number char character_data cid cidr circle cstring date datemultirange daterange event_trigger
fdw_handler float4 float8 gtsvector index_am_handler inet int2 int2vector int4 int4multirange int4range int8
int8multirange int8range internal interval json jsonb jsonpath language_handler line lseg macaddr macaddr8
money name numeric nummultirange numrange oid oidvector path pg_brin_bloom_summary
pg_brin_minmax_multi_summary pg_ddl_command pg_dependencies pg_lsn pg_mcv_list pg_ndistinct pg_node_tree
pg_snapshot point polygon record refcursor regclass regcollation regconfig regdictionary regnamespace regoper
regoperator regproc regprocedure regrole regtype sql_identifier table_am_handler text tid time time_stamp
timestamp timestamptz timetz trigger tsm_handler tsmultirange tsquery tsrange tstzmultirange tstzrange
tsvector txid_snapshot unknown uuid varbit varchar void xid xid8 xml yes_or_no
""".split())

#: Words that sqlglot reads as names but that open a parenthesised clause, not a function call.
SYNTAX_WORDS = frozenset({
    "system", "bernoulli", "reservoir", "repeatable", "materialized", "sets", "cube", "rollup", "against",
    "exclude", "rename", "pivot", "unpivot", "qualify", "sample", "tablesample", "using", "over", "filter",
    "within", "group", "values", "lateral", "ordinality", "distinct", "only", "not",
})


def names(text: str) -> frozenset[str]:
    """The names in one of the blocks above (comments stripped)."""
    found = set()
    for line in text.splitlines():
        found.update(line.split("#", 1)[0].split())
    return frozenset(found)


_DIALECT_BLOCKS = {"sqlite": SQLITE, "duckdb": DUCKDB, "postgres": POSTGRES}


@lru_cache(maxsize=None)
def allowed_functions(dialect: str) -> frozenset[str]:
    """The pure functions of a sqlglot dialect: its own list and the common one."""
    block = _DIALECT_BLOCKS.get(dialect)
    return names(COMMON) | (names(block) if block else frozenset())


def has_own_list(dialect: str) -> bool:
    return dialect in _DIALECT_BLOCKS


@lru_cache(maxsize=None)
def denied_relations(dialect: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """(exact names, prefixes) of relations a prediction may not read."""
    entries = names(DENIED_RELATIONS.get(dialect, ""))
    exact = frozenset(e for e in entries if not e.endswith("*"))
    prefixes = tuple(sorted(e[:-1] for e in entries if e.endswith("*")))
    return exact, prefixes


@lru_cache(maxsize=None)
def denied_information_schema(dialect: str) -> frozenset[str]:
    return names(DENIED_INFORMATION_SCHEMA.get(dialect, ""))


@lru_cache(maxsize=None)
def denied_table_functions(dialect: str) -> frozenset[str]:
    """Allowed functions a prediction may not call as a table (see :data:`DENIED_TABLE_FUNCTIONS`)."""
    return names(DENIED_TABLE_FUNCTIONS.get(dialect, ""))
