-- Tables with every PostgreSQL type the type mapping covers. Used by the golden generator
-- (tests/conformance/pg_types_golden.py) and by tests/unit/capture/postgres/test_types_golden.py.
CREATE EXTENSION IF NOT EXISTS hstore;
CREATE EXTENSION IF NOT EXISTS ltree;
CREATE EXTENSION IF NOT EXISTS citext;
CREATE EXTENSION IF NOT EXISTS isn;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'with,comma');
CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
CREATE DOMAIN money_amount AS numeric(10, 2);
CREATE DOMAIN short_text AS varchar(8);
CREATE TYPE pair AS (a int, b text);

CREATE TABLE t_num (
  id int PRIMARY KEY,
  c_bool boolean, c_int2 smallint, c_int4 integer, c_int8 bigint, c_oid oid,
  c_float4 real, c_float8 double precision,
  c_numeric numeric, c_numeric_10_3 numeric(10, 3), c_numeric_5 numeric(5), c_numeric_38_10 numeric(38, 10),
  c_money money, c_numeric_neg numeric(5, -2)
);

CREATE TABLE t_text (
  id int PRIMARY KEY,
  c_char char, c_char5 char(5), c_bpchar bpchar, c_varchar varchar, c_varchar20 varchar(20), c_text text,
  c_name name, c_qchar "char", c_citext citext, c_bytea bytea, c_uuid uuid, c_json json, c_jsonb jsonb,
  c_tsvector tsvector, c_tsquery tsquery, c_ltree ltree, c_hstore hstore, c_enum mood,
  c_posint posint, c_money_amount money_amount, c_short_text short_text
);

CREATE TABLE t_time (
  id int PRIMARY KEY,
  c_date date, c_time time, c_time0 time(0), c_time3 time(3), c_timetz timetz, c_timetz2 timetz(2),
  c_ts timestamp, c_ts0 timestamp(0), c_ts3 timestamp(3), c_tstz timestamptz, c_tstz2 timestamptz(2),
  c_interval interval, c_interval_ds interval day to second(3)
);

CREATE TABLE t_misc (
  id int PRIMARY KEY,
  c_inet inet, c_cidr cidr, c_macaddr macaddr, c_macaddr8 macaddr8,
  c_bit1 bit(1), c_bit8 bit(8), c_varbit varbit, c_varbit5 varbit(5),
  c_point point, c_box box, c_circle circle, c_line line, c_lseg lseg, c_path path, c_polygon polygon,
  c_int4range int4range, c_int8range int8range, c_numrange numrange, c_tsrange tsrange,
  c_tstzrange tstzrange, c_daterange daterange, c_pg_lsn pg_lsn, c_txid txid_snapshot,
  c_multirange int4multirange, c_pair pair, c_isbn isbn
);

CREATE TABLE t_array (
  id int PRIMARY KEY,
  a_int2 smallint[], a_int4 integer[], a_int8 bigint[], a_oid oid[], a_text text[], a_varchar varchar(5)[],
  a_char char(2)[], a_numeric numeric[], a_numeric_5_2 numeric(5, 2)[], a_float4 real[], a_float8 float8[],
  a_bool boolean[], a_date date[], a_time time[], a_timetz timetz[], a_ts timestamp[], a_tstz timestamptz[],
  a_uuid uuid[], a_json json[], a_jsonb jsonb[], a_bytea bytea[], a_inet inet[], a_cidr cidr[],
  a_macaddr macaddr[], a_int4range int4range[], a_daterange daterange[], a_enum mood[], a_citext citext[],
  a_hstore hstore[], a_ltree ltree[], a_int4_2d integer[][], a_money money[], a_interval interval[],
  a_name name[], a_varbit varbit[], a_point point[],
  a_text_2d text[][], a_bounds int[], a_posint posint[], a_bit bit(3)[], a_int8range int8range[],
  a_numrange numrange[], a_tsrange tsrange[], a_tstzrange tstzrange[], a_macaddr8 macaddr8[],
  a_char1 "char"[], a_bpchar bpchar[], a_box box[], a_tsquery tsquery[], a_pair pair[], a_lsn pg_lsn[]
);

CREATE TABLE t_default (
  id serial PRIMARY KEY,
  d_int int NOT NULL DEFAULT 42, d_int_opt int DEFAULT -7, d_big bigint DEFAULT 9007199254740993,
  d_small smallint NOT NULL DEFAULT 3, d_bool boolean NOT NULL DEFAULT true, d_text text DEFAULT 'hello',
  d_varchar varchar(10) NOT NULL DEFAULT 'v''q', d_numeric numeric(6, 2) DEFAULT 12.5,
  d_numeric_var numeric DEFAULT 3.14159, d_float8 float8 DEFAULT 1.5, d_float4 real DEFAULT 2.25,
  d_date date DEFAULT '2020-02-29', d_time time DEFAULT '12:00:01.5', d_ts timestamp DEFAULT '2020-01-01 10:00:00',
  d_tstz timestamptz DEFAULT '2020-01-01 10:00:00+02', d_now timestamptz DEFAULT now(),
  d_uuid uuid DEFAULT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', d_json jsonb DEFAULT '{"a": 1}',
  d_enum mood DEFAULT 'ok', d_interval interval DEFAULT '1 day', d_bytea bytea DEFAULT '\x0102',
  d_nn_noexpr int NOT NULL, d_nn_text text NOT NULL, d_null text DEFAULT NULL, d_money money DEFAULT 5.25,
  d_arr int[] DEFAULT '{1,2}', d_inet inet DEFAULT '10.0.0.1', d_bigserial bigserial,
  d_bit bit(1) DEFAULT B'1', d_bits bit(3) DEFAULT B'101', d_varbit varbit DEFAULT B'11',
  d_char char(3) DEFAULT 'ab', d_timetz timetz DEFAULT '12:00:00+02', d_cur_time time DEFAULT CURRENT_TIME,
  d_cur_date date DEFAULT CURRENT_DATE, d_cur_ts timestamp DEFAULT LOCALTIMESTAMP,
  d_neg_num numeric(5, 2) DEFAULT -1.5, d_domain posint DEFAULT 5, d_int_expr int DEFAULT (1 + 2),
  d_text_fn text DEFAULT md5('x'), d_float_nan float8 DEFAULT 'NaN', d_bool_false boolean DEFAULT false,
  d_json_arr json DEFAULT '[]', d_ts3 timestamp(3) DEFAULT '2021-06-01 12:00:00.123',
  d_tstz0 timestamptz(0) DEFAULT '2021-06-01 12:00:00+00', d_interval_neg interval DEFAULT '-1 day -02:00:00',
  d_name name DEFAULT 'nm', d_citext citext DEFAULT 'CI', d_small_neg smallint DEFAULT -3,
  d_time3 time(3) DEFAULT '01:02:03.456', d_cast_text varchar(5) DEFAULT 'x'::text
);

-- Unchanged TOAST: the streaming phase updates only `other`, so the big values arrive as 'u' columns.
CREATE TABLE t_toast (
  id int PRIMARY KEY, other int, big_text text, big_bytea bytea, big_jsonb jsonb, big_int_arr int[],
  big_text_arr text[], big_varchar varchar, big_hstore hstore, big_numeric numeric,
  big_bigint_arr bigint[], big_uuid_arr uuid[], big_bytea_arr bytea[], big_tsvector tsvector,
  big_date_arr date[], big_json_arr jsonb[]
);
ALTER TABLE t_toast ALTER COLUMN big_text SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_bytea SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_jsonb SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_int_arr SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_text_arr SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_varchar SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_hstore SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_numeric SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_bigint_arr SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_uuid_arr SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_bytea_arr SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_tsvector SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_date_arr SET STORAGE EXTERNAL;
ALTER TABLE t_toast ALTER COLUMN big_json_arr SET STORAGE EXTERNAL;

-- xml needs a server built with libxml (Debian's PostgreSQL 15 is; the embedded 18 is not).
CREATE TABLE t_xml (id int PRIMARY KEY, c_xml xml, a_xml xml[]);

-- Domains: NOT NULL and DEFAULT on the domain, a domain over a domain, a domain over an array.
CREATE DOMAIN nn_text AS text NOT NULL DEFAULT 'dflt';
CREATE DOMAIN nn_int AS int NOT NULL CHECK (VALUE >= 0);
CREATE DOMAIN dom_dom AS posint;
CREATE DOMAIN int_list AS int[];
CREATE TABLE t_domain (id int PRIMARY KEY, c_nn_text nn_text, c_nn_int nn_int, c_dom_dom dom_dom,
  c_int_list int_list, c_dom_default short_text DEFAULT 'abc');

-- PostGIS (Debian's postgresql-15-postgis-3; the embedded 18 has no PostGIS): geometry and
-- geography as HexEWKB, an array of geometries and a TOASTed geometry left unchanged by an update.
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE TABLE t_postgis (id int PRIMARY KEY, other int, g geometry, g4326 geometry(Point, 4326), gg geography,
  a_g geometry[], big_geom geometry);
ALTER TABLE t_postgis ALTER COLUMN big_geom SET STORAGE EXTERNAL;
