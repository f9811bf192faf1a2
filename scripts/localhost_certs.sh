# Sourced, not run: make_localhost_certs DIR CA_NAME writes into DIR a CA
# (ca.pem, ca.key) and a server certificate for localhost and 127.0.0.1
# signed by it (srv.pem, srv.key), valid two days. openssl's chatter goes to
# DIR/openssl.out. Used by bench/server/tls_bench.sh and
# tests/vm/ktls_vm_test.sh.
make_localhost_certs() {
  local dir=$1 ca_name=$2
  (
    cd "$dir"
    openssl req -x509 -newkey rsa:2048 -nodes -subj "/CN=$ca_name" -keyout ca.key -out ca.pem -days 2
    openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout srv.key -out srv.csr
    echo "subjectAltName=DNS:localhost,IP:127.0.0.1" >srv.ext
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out srv.pem \
      -extfile srv.ext
    rm -f srv.csr srv.ext ca.srl
  ) >"$dir/openssl.out" 2>&1
}
