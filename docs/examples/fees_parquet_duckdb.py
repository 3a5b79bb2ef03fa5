# %% [markdown]
# # Fees and feerates per block: Parquet from Python, percentiles in DuckDB
#
# Notebook-style example (cells marked `# %%`; runs as a script too):
#
#     PYTHONPATH=build/release/python build/venv/bin/python docs/examples/fees_parquet_duckdb.py [DATADIR_OR_BLOCKS]
#
# With a Core datadir the spent outputs come from its rev files; with bare blk files (or without an
# argument: a small generated regtest chain) ibdkit replays the blocks to know them.
# Needs pyarrow and duckdb (`scripts/pydeps.sh --bench`).

# %%
import os
import subprocess
import sys
import tempfile
import time

import duckdb
import pyarrow.parquet as pq

import ibdkit

work = tempfile.mkdtemp(prefix="ibdkit-example-")
if len(sys.argv) > 1:
    source = sys.argv[1]
else:
    cli = os.environ.get("IBDKIT_CLI", "build/release/ibdkit")
    subprocess.run([cli, "gen-chain", "--preset", "tiny", "--out", work, "--no-progress"], check=True)
    source = os.path.join(work, "blocks")

# %% [markdown]
# ## 1. Every transaction with its fee, to Parquet
# The batches are built in C++ (no Python object per transaction) and streamed to the file:
# memory stays bounded at any chain size.

# %%
path = os.path.join(work, "transactions.parquet")
start = time.time()
reader = ibdkit.read_blocks(source, spent_outputs=True)
with pq.ParquetWriter(path, ibdkit.table_schema("transactions")) as out:
    rows = 0
    for batch in reader.to_arrow("transactions"):
        out.write_batch(batch)
        rows += batch.num_rows
print(f"{rows} transactions to {path} in {time.time() - start:.1f} s")

# %% [markdown]
# ## 2. Feerate percentiles per block (sat/vB), weighted by transaction, coinbase excluded

# %%
query = f"""
SELECT height,
       count(*)                                   AS txs,
       sum(fee)                                   AS fees,
       quantile_cont(feerate, 0.10)               AS p10,
       quantile_cont(feerate, 0.50)               AS median,
       quantile_cont(feerate, 0.90)               AS p90,
       max(feerate)                               AS max
FROM read_parquet('{path}')
WHERE fee IS NOT NULL
GROUP BY height
ORDER BY height DESC
LIMIT 10
"""
print(duckdb.sql(query))

# %% [markdown]
# ## 3. The transactions' fees add up to the blocks' (each block was checked on read: subsidy + fees ≥ coinbase)

# %%
fees_tx = duckdb.sql(f"SELECT sum(fee) FROM read_parquet('{path}')").fetchall()[0][0]
fees_blocks = sum(sum(batch.column("fees").to_pylist())
                  for batch in ibdkit.read_blocks(source, spent_outputs=True).to_arrow("blocks"))
assert fees_tx == fees_blocks, (fees_tx, fees_blocks)
print(f"fees over the chain: {fees_tx} sat")
