// Gives freed heap memory back to the operating system, so resident memory shows what is in
// use: promptly while serving, and all of it after a model load or a model drop.
#pragma once

namespace embedding {

// Asks tcmalloc, when the process runs on it (the server links it), to return freed pages
// at its fastest rate, unless TCMALLOC_RELEASE_RATE in the environment chose one. Nothing on
// glibc's malloc. Call once, early in main.
void ReleaseFreedMemoryPromptly();

// Returns the allocator's free pages to the system now: tcmalloc's release when the process
// runs on tcmalloc, glibc's malloc_trim otherwise (tests, the sanitizer build). Thread-safe;
// costs milliseconds (it walks the free lists), so call it after rare events, never per
// request.
void ReturnFreedMemoryToSystem();

}  // namespace embedding
