# Run at every build (server/CMakeLists.txt): the core knows no transport and no wire format. A
# core file that includes a gRPC, HTTP-library or generated protobuf header (or the .proto's
# folder) fails the build, naming the file.
file(GLOB core_files ${CORE_DIR}/*.h ${CORE_DIR}/*.cc)
foreach(file ${core_files})
  file(STRINGS ${file} forbidden
       REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](grpc/|grpcpp/|httplib|boost/beast|boost/asio|google/protobuf/|embedding/v1/|[^>\"]*\\.pb\\.h)")
  if(forbidden)
    message(FATAL_ERROR "${file}: server/core/ includes a transport or wire header (${forbidden}); "
                        "the doors (server/grpc, server/http) map the wire onto the core's "
                        "vocabulary, never the reverse")
  endif()
endforeach()
