# python/tests' ctest entries (CMakeLists.txt): seconds each took on a 2-vCPU machine, so that ctest
# starts the longest first on a fresh clone (it has no timings of its own yet), and the files whose
# tests install and run btcd (scripts/btcd.sh) one at a time.
set(IBDKIT_PY_TEST_COSTS
  test_sync_swiftsync 172
  test_swiftsync_coins 119
  test_sync_peers 105
  test_sync_presync 60
  test_sync_datadir 72
  test_kill_campaign 69
  test_sync_btcd 57
  test_replay_datadir 47
  test_docs_node 42
  test_spent_core 42
  test_serve 42
  test_undo_core 25
  test_replay_failure 22
  test_serve_load 12
)
while(IBDKIT_PY_TEST_COSTS)
  list(POP_FRONT IBDKIT_PY_TEST_COSTS py_name py_cost)
  if(TEST py_${py_name})
    set_tests_properties(py_${py_name} PROPERTIES COST ${py_cost})
  endif()
endwhile()
foreach(py_name test_serve test_sync_btcd)
  if(TEST py_${py_name})
    set_tests_properties(py_${py_name} PROPERTIES RESOURCE_LOCK btcd)
  endif()
endforeach()
