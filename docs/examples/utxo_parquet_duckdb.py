# %% [markdown]
# # A UTXO set in Parquet, queried with DuckDB
#
# Notebook-style example (cells marked `# %%`; runs as a script too):
#
#     PYTHONPATH=build/release/python build/venv/bin/python docs/examples/utxo_parquet_duckdb.py [CHAIN_DIR]
#
# Without CHAIN_DIR it generates a small regtest chain with the CLI (`ibdkit gen-chain`).
# Needs pyarrow and duckdb (`scripts/pydeps.sh --bench`).

# %%
import os
import subprocess
import sys
import tempfile
import time

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

import ibdkit

work = tempfile.mkdtemp(prefix="ibdkit-example-")
if len(sys.argv) > 1:
    blocks = sys.argv[1]
else:
    cli = os.environ.get("IBDKIT_CLI", "build/release/ibdkit")
    subprocess.run([cli, "gen-chain", "--preset", "tiny", "--out", work, "--no-progress"], check=True)
    blocks = os.path.join(work, "blocks")

# %% [markdown]
# ## 1. Replay the block files into a chainstate (Core's LevelDB format)

# %%
stats = ibdkit.replay(blocks, chainstate=os.path.join(work, "chainstate"), progress=False)
print(f"height {stats['height']}  coins {stats['txouts']}  hash_serialized_3 {stats['hash_serialized_3']}")

# %% [markdown]
# ## 2. Export every coin to Parquet (Arrow batches built in C++)

# %%
cs = ibdkit.Chainstate(os.path.join(work, "chainstate"), network=stats["network"])
t0 = time.perf_counter()
with pq.ParquetWriter(os.path.join(work, "utxo.parquet"), cs.schema()) as w:
    for batch in cs.to_arrow(batch_size=65536):
        w.write_batch(batch)
print(f"wrote {stats['txouts']} coins in {time.perf_counter() - t0:.2f} s")

# %% [markdown]
# ## 3. Ask DuckDB: where does the value sit, by script type?

# %%
con = duckdb.connect()
con.execute(f"CREATE VIEW utxo AS SELECT * FROM read_parquet('{os.path.join(work, 'utxo.parquet')}')")
print(con.sql("""
    SELECT script_type,
           count(*)                      AS coins,
           sum(value) / 1e8              AS btc,
           round(100 * sum(value) / (SELECT sum(value) FROM utxo), 2) AS pct_value,
           count(DISTINCT address)       AS addresses
    FROM utxo GROUP BY script_type ORDER BY btc DESC
"""))

# %% [markdown]
# The total agrees with the chainstate's own statistics (gettxoutsetinfo's total_amount):

# %%
total = con.execute("SELECT sum(value) FROM utxo").fetchall()[0][0]
assert total == stats["total_amount_sat"], (total, stats["total_amount_sat"])
print("total", total / 1e8, "BTC =", stats["total_amount"])
