"""The guard's function allow-list: functions known to be free of side effects, per dialect.

A function call is allowed when it is one of

- sqlglot's typed functions (sqlglot parses the name into its own `exp.Func` class, such as
  `exp.Substring` or `exp.Avg`), except the reviewed `UNSAFE_TYPED_FUNCTIONS`: file readers,
  sequence writers, secrets and calls out to machine-learning services; or
- a name in `SAFE_FUNCTIONS` for the database's dialect (reviewed by hand: string, math,
  date/time, aggregate, window, JSON, array, regular-expression and formatting functions); or
- a name the user adds with `Context.allowed_functions`, for their own pure functions.

Everything else is refused: a new or unknown function fails closed. On PostgreSQL, a name that
a user schema also defines is refused too (`guard._shadowed_function`), since overload
resolution may call the user's function instead of the built-in. The names in
`macsql.database.guard.FORBIDDEN_FUNCTIONS` (and its patterns) are refused even when a user adds
them: they read files, control the server or run SQL given as text.

Why not allowed, on purpose: PostgreSQL's index maintenance functions (`brin_summarize_range`,
`gin_clean_pending_list`) rewrite index pages inside a READ ONLY transaction; `crosstab`,
`connectby`, `xpath_table`, `query_to_xml` run SQL given as text; `current_setting`,
`pg_*` and `setseed` read or change server or session state; `currval`/`nextval` touch
sequences. SQLite's `randomblob` and `zeroblob` allocate unbounded memory, `sqlite_log` writes
to the error log, `load_extension` loads native code, FTS and R*Tree internals are not queries.
"""

from __future__ import annotations

# --- sqlglot's typed functions that are not safe everywhere --------------------------------

UNSAFE_TYPED_FUNCTIONS: frozenset[str] = frozenset(
    {
        "ReadCSV",  # DuckDB read_csv: reads files
        "ReadParquet",  # DuckDB read_parquet: reads files
        "ToFile",  # Snowflake TO_FILE: a staged file
        "NextValueFor",  # NEXT VALUE FOR: advances a sequence (a write)
        "Secret",  # Snowflake SECRET: reads a stored secret
        "DynamicIdentifier",  # Snowflake IDENTIFIER('t'): a relation named by a string
        # calls out to a model service: slow, billed, and not a query of the data
        "AIAgg",
        "AIClassify",
        "AIEmbed",
        "AIForecast",
        "AIGenerate",
        "AISimilarity",
        "AISummarizeAgg",
        "GenerateEmbedding",
        "GenerateText",
        "MLForecast",
        "MLTranslate",
        "Predict",
        "VectorSearch",
        "FeaturesAtTime",
    }
)
"""Class names of `exp.Func` subclasses refused in every dialect."""


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# --- names shared by the SQL dialects macsql talks to ---------------------------------------

_COMMON = _names(
    """
    abs acos asin atan atan2 ceil ceiling cos cot degrees exp floor ln log log10 log2 mod pi
    power pow radians round sign sin sqrt tan trunc greatest least
    avg count max min sum stddev stddev_pop stddev_samp variance var_pop var_samp corr
    covar_pop covar_samp
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value
    nth_value
    coalesce nullif
    lower upper length char_length character_length octet_length bit_length substr substring
    trim ltrim rtrim replace concat concat_ws reverse left right lpad rpad repeat position
    ascii
    current_date current_time current_timestamp
    """
)

# SQLite's table-valued functions on the list below: eponymous virtual tables, which SQLite
# declares on a connection's first use of each, and which its authorizer sees as writes to
# sqlite_master then. Statement connections use each once before their authorizer is set.
SQLITE_TABLE_FUNCTIONS = ("json_each", "json_tree", "jsonb_each", "jsonb_tree")

# SQLite 3.40 to 3.47: every built-in that only computes a value (checked against
# `pragma_function_list`), plus the JSON table-valued functions.
_SQLITE = _names(
    """
    -> ->> abs acos acosh asin asinh atan atan2 atanh avg ceil ceiling char coalesce concat
    concat_ws cos cosh count cume_dist current_date current_time current_timestamp date
    datetime degrees dense_rank exp first_value floor format glob group_concat hex if ifnull
    iif instr julianday lag last_value lead length like likelihood likely ln log log10 log2
    lower ltrim max median min mod nth_value ntile nullif octet_length percent_rank
    percentile percentile_cont percentile_disc pi pow power printf quote radians random rank
    replace round row_number rtrim sign sin sinh soundex sqrt strftime string_agg substr
    substring subtype sum tan tanh time timediff total trim trunc typeof unhex unicode
    unistr unistr_quote unixepoch unlikely upper
    json json_array json_array_length json_error_position json_extract json_group_array
    json_group_object json_insert json_object json_patch json_pretty json_quote json_remove
    json_replace json_set json_type json_valid json_each json_tree
    jsonb jsonb_array jsonb_extract jsonb_group_array jsonb_group_object jsonb_insert
    jsonb_object jsonb_patch jsonb_remove jsonb_replace jsonb_set jsonb_each jsonb_tree
    match bm25 highlight snippet offsets matchinfo
    changes total_changes last_insert_rowid sqlite_version sqlite_source_id
    sqlite_compileoption_used sqlite_compileoption_get sqlite_offset
    """
)

_POSTGRES = _names(
    """
    abs cbrt ceil ceiling degrees div exp factorial floor gcd lcm ln log log10 min_scale mod
    pi power radians round scale sign sqrt trim_scale trunc width_bucket random random_normal
    acos acosd asin asind atan atand atan2 atan2d cos cosd cot cotd sin sind tan tand sinh
    cosh tanh asinh acosh atanh erf erfc
    ascii bit_length btrim char_length character_length chr concat concat_ws format initcap
    left length lower lpad ltrim md5 normalize octet_length overlay position quote_ident
    quote_literal quote_nullable repeat replace reverse right rpad rtrim split_part
    starts_with string_to_array string_to_table strpos substr substring to_ascii to_hex
    translate trim unistr upper sha224 sha256 sha384 sha512 encode decode convert
    convert_from convert_to get_bit get_byte set_bit set_byte bit_count
    regexp_count regexp_instr regexp_like regexp_match regexp_matches regexp_replace
    regexp_split_to_array regexp_split_to_table regexp_substr
    to_char to_date to_number to_timestamp
    age clock_timestamp current_date current_time current_timestamp date_add date_bin
    date_part date_subtract date_trunc extract isfinite justify_days justify_hours
    justify_interval localtime localtimestamp make_date make_interval make_time
    make_timestamp make_timestamptz now statement_timestamp timeofday
    transaction_timestamp timezone
    coalesce nullif greatest least num_nonnulls num_nulls
    array_agg avg bit_and bit_or bit_xor bool_and bool_or count every max min sum string_agg
    json_agg jsonb_agg json_object_agg jsonb_object_agg json_agg_strict jsonb_agg_strict
    any_value corr covar_pop covar_samp regr_avgx regr_avgy regr_count regr_intercept regr_r2
    regr_slope regr_sxx regr_sxy regr_syy stddev stddev_pop stddev_samp variance var_pop
    var_samp mode percentile_cont percentile_disc rank dense_rank percent_rank cume_dist
    grouping range_agg range_intersect_agg
    row_number ntile lag lead first_value last_value nth_value
    array_append array_cat array_dims array_fill array_length array_lower array_ndims
    array_position array_positions array_prepend array_remove array_replace array_to_string
    array_upper cardinality trim_array unnest generate_series generate_subscripts
    to_json to_jsonb array_to_json row_to_json json_build_array jsonb_build_array
    json_build_object jsonb_build_object json_object jsonb_object json_array_length
    jsonb_array_length json_each jsonb_each json_each_text jsonb_each_text json_extract_path
    jsonb_extract_path json_extract_path_text jsonb_extract_path_text json_object_keys
    jsonb_object_keys json_array_elements jsonb_array_elements json_array_elements_text
    jsonb_array_elements_text json_typeof jsonb_typeof json_strip_nulls jsonb_strip_nulls
    jsonb_set jsonb_set_lax jsonb_insert jsonb_pretty jsonb_path_exists jsonb_path_match
    jsonb_path_query jsonb_path_query_array jsonb_path_query_first json_populate_record
    jsonb_populate_record json_populate_recordset jsonb_populate_recordset json_to_record
    jsonb_to_record json_to_recordset jsonb_to_recordset json_scalar json_serialize
    to_tsvector to_tsquery plainto_tsquery phraseto_tsquery websearch_to_tsquery ts_rank
    ts_rank_cd ts_headline setweight strip numnode querytree
    int4range int8range numrange daterange tsrange tstzrange isempty lower_inc upper_inc
    lower_inf upper_inf range_merge
    pg_typeof
    """
)

_MYSQL = _names(
    """
    abs acos asin atan atan2 ceil ceiling conv cos cot crc32 degrees exp floor ln log log10
    log2 mod pi pow power radians rand round sign sin sqrt tan truncate
    ascii bin bit_length char char_length character_length concat concat_ws elt field
    find_in_set format from_base64 hex insert instr lcase left length locate lower lpad
    ltrim make_set mid oct octet_length ord position quote regexp_instr regexp_like
    regexp_replace regexp_substr repeat replace reverse right rpad rtrim soundex space strcmp
    substr substring substring_index to_base64 trim ucase unhex upper weight_string md5 sha
    sha1 sha2
    adddate addtime convert_tz curdate current_date current_time current_timestamp curtime
    date date_add date_format date_sub datediff day dayname dayofmonth dayofweek dayofyear
    extract from_days from_unixtime hour last_day localtime localtimestamp makedate maketime
    microsecond minute month monthname now period_add period_diff quarter sec_to_time second
    str_to_date subdate subtime sysdate time time_format time_to_sec timediff timestamp
    timestampadd timestampdiff to_days to_seconds unix_timestamp utc_date utc_time
    utc_timestamp week weekday weekofyear year yearweek
    coalesce greatest least if ifnull isnull nullif interval
    avg bit_and bit_or bit_xor count group_concat json_arrayagg json_objectagg max min std
    stddev stddev_pop stddev_samp sum var_pop var_samp variance
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value
    nth_value
    json_array json_array_append json_array_insert json_contains json_contains_path
    json_depth json_extract json_insert json_keys json_length json_merge_patch
    json_merge_preserve json_object json_overlaps json_pretty json_quote json_remove
    json_replace json_search json_set json_table json_type json_unquote json_valid json_value
    """
)

_DUCKDB = _names(
    """
    abs acos asin atan atan2 cbrt ceil ceiling cos cot degrees even exp factorial floor gamma
    gcd lcm ln log log10 log2 mod pi pow power radians random round sign sin sqrt tan trunc
    xor isnan isinf isfinite
    ascii bit_length chr concat concat_ws contains ends_with format instr lcase left length
    like_escape lower lpad ltrim md5 nfc_normalize ord position prefix printf regexp_extract
    regexp_extract_all regexp_full_match regexp_matches regexp_replace regexp_split_to_array
    repeat replace reverse right rpad rtrim sha256 split split_part starts_with string_split
    strip_accents strlen strpos substr substring suffix translate trim ucase unicode upper
    levenshtein damerau_levenshtein hamming jaccard jaro_similarity jaro_winkler_similarity
    age current_date current_time current_timestamp date_add date_diff date_part date_sub
    date_trunc datediff datepart datesub datetrunc day dayname dayofmonth dayofweek dayofyear
    epoch epoch_ms extract hour isodow isoyear last_day make_date make_time make_timestamp
    minute month monthname now quarter second strftime strptime time_bucket to_timestamp
    today week weekday weekofyear year yearweek
    coalesce greatest least ifnull nullif
    any_value arbitrary arg_max arg_min argmax argmin array_agg avg bit_and bit_or bit_xor
    bool_and bool_or count count_star favg first fsum group_concat histogram last list max
    max_by mean median min min_by mode product quantile quantile_cont quantile_disc
    string_agg sum approx_count_distinct approx_quantile corr covar_pop covar_samp entropy
    kurtosis regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx
    regr_sxy regr_syy skewness stddev stddev_pop stddev_samp var_pop var_samp variance
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value
    nth_value
    array_length array_contains array_position array_slice array_sort array_reverse
    array_distinct array_concat array_to_string list_value list_contains list_position
    list_slice list_sort list_reverse list_distinct list_concat list_aggregate list_transform
    list_filter len unnest generate_series range flatten
    json json_array json_array_length json_contains json_extract json_extract_string
    json_keys json_object json_structure json_type json_valid to_json
    """
)

SAFE_FUNCTIONS: dict[str, frozenset[str]] = {
    "sqlite": _SQLITE | _COMMON,
    "postgres": _POSTGRES | _COMMON,
    "mysql": _MYSQL | _COMMON,
    "duckdb": _DUCKDB | _COMMON,
}
"""Reviewed names (lower case) allowed by name in each dialect, for calls sqlglot does not type.
Other dialects get `COMMON_FUNCTIONS` only."""

COMMON_FUNCTIONS: frozenset[str] = _COMMON
