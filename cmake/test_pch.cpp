// The unit that builds the test suite's precompiled header (Note [One precompiled header for the
// tests], cmake/VramlabTargets.cmake): CMake compiles the header beside it.
