# cmake -DMESSAGE=<text> -P fail.cmake
# A test that can't run because a prerequisite is missing: fail, saying what is missing.
message(FATAL_ERROR "${MESSAGE}")
