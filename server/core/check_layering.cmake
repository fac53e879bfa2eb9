# Run at every build (server/CMakeLists.txt): the core knows no transport. A core file that
# includes a gRPC, HTTP-library or generated-service header fails the build, naming the file.
file(GLOB core_files ${CORE_DIR}/*.h ${CORE_DIR}/*.cc)
foreach(file ${core_files})
  file(STRINGS ${file} forbidden
       REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](grpc/|grpcpp/|httplib|boost/beast|boost/asio|[^>\"]*\\.grpc\\.pb\\.h)")
  if(forbidden)
    message(FATAL_ERROR "${file}: server/core/ includes a transport header (${forbidden}); "
                        "the doors (server/grpc, server/http) adapt to the core, never the reverse")
  endif()
endforeach()
