%% strata_ra_nif: the calls of strata's NIF library (erlang/c_src/) on a
%% raftmeta store. strata_ra_log_meta is the module to use; these are its
%% building blocks (and a benchmark's). Terms are described in
%% c_src/term_codec.h: ids are binaries; voted_for is stored as `undefined`,
%% a name binary or {NameBinary, NodeBinary}, and fetched as `undefined`, a
%% name atom or {NameAtom, NodeAtom} (as binaries only if the text makes no
%% atom); errors are `closed` or {Code, DataDir, Message}.
%%
%% Which scheduler runs what (c_src/strata_ra_nif.cpp): open/2, close/1,
%% erase/2, erase_sync/3 and stats/1 run on dirty I/O schedulers; store/4,
%% store_sync/5 and fetch/3 on the caller's scheduler, returning in
%% microseconds. store_sync/5 and erase_sync/3 return `ok` once the change
%% is applied and queued; {Ref, ok | {error, Reason}} is sent to the caller
%% once it is durable, or {Ref, {error, timeout}} if it is not within the
%% store's sync_timeout_ms: exactly one reply per call.
-module(strata_ra_nif).

-export([open/2,
         close/1,
         store/4,
         store_sync/5,
         erase/2,
         erase_sync/3,
         fetch/3,
         stats/1,
         send_replies/1,
         inject_sync_failure/1,
         inject_sync_hang/2]).

-nifs([open/2,
       close/1,
       store/4,
       store_sync/5,
       erase/2,
       erase_sync/3,
       fetch/3,
       stats/1,
       send_replies/1,
       inject_sync_failure/1,
       inject_sync_hang/2]).

-on_load(load/0).

-type handle() :: reference().
-type key() :: current_term | voted_for | last_applied.
-type value() :: non_neg_integer() | undefined | binary() | {binary(), binary()}.
-type fetched() :: non_neg_integer() | undefined | atom() | {atom(), atom()} |
                   binary() | {binary(), binary()}.
-type reason() :: closed | timeout | {atom(), binary(), binary()}.
-export_type([handle/0, reason/0]).

load() ->
    erlang:load_nif(filename:join(priv_dir(), "strata_ra_nif"), 0).

%% <app>/priv: code:priv_dir/1 when the application's directory is named
%% strata_ra (the build's layout), else next to the ebin holding this module.
priv_dir() ->
    case code:priv_dir(strata_ra) of
        {error, bad_name} ->
            filename:join(filename:dirname(filename:dirname(code:which(?MODULE))), "priv");
        Dir ->
            Dir
    end.

%% Opens (creating, or migrating <Dir>/meta.dets) the store in Dir, an
%% absolute path; the caller becomes its owner: when it dies, the store is
%% closed. Options: c_src/open_options.h.
-spec open(binary(), map()) -> {ok, handle()} | {error, reason()}.
open(_Dir, _Options) -> erlang:nif_error(not_loaded).

%% Fsyncs everything pending and closes; idempotent.
-spec close(handle()) -> ok | {error, reason()}.
close(_Handle) -> erlang:nif_error(not_loaded).

-spec store(handle(), binary(), key(), value()) -> ok | {error, reason()}.
store(_Handle, _Id, _Key, _Value) -> erlang:nif_error(not_loaded).

-spec store_sync(handle(), binary(), key(), value(), reference()) -> ok | {error, reason()}.
store_sync(_Handle, _Id, _Key, _Value, _Ref) -> erlang:nif_error(not_loaded).

-spec erase(handle(), binary()) -> ok | {error, reason()}.
erase(_Handle, _Id) -> erlang:nif_error(not_loaded).

-spec erase_sync(handle(), binary(), reference()) -> ok | {error, reason()}.
erase_sync(_Handle, _Id, _Ref) -> erlang:nif_error(not_loaded).

%% {error, closed} once the store is closing or its owner is dead. A vote
%% comes back as atoms, made once per stored vote (c_src/vote_atoms.h).
-spec fetch(handle(), binary(), key()) -> fetched() | {error, closed}.
fetch(_Handle, _Id, _Key) -> erlang:nif_error(not_loaded).

-spec stats(handle()) -> map() | {error, closed}.
stats(_Handle) -> erlang:nif_error(not_loaded).

%% The owner (the process that opened the store), when it receives the
%% atom `strata_ra_replies`, calls this until it returns `done`: it sends
%% the store_sync replies whose outcome is known, from its own process
%% (c_src/sync_waiter.h). Normal scheduler, bounded work per call.
-spec send_replies(handle()) -> done | more.
send_replies(_Handle) -> erlang:nif_error(not_loaded).

%% Tests only (a store opened with fault_injection => true): every later
%% fsync fails, as a failing disk's would.
-spec inject_sync_failure(handle()) -> ok | {error, reason()}.
inject_sync_failure(_Handle) -> erlang:nif_error(not_loaded).

%% Tests only (a store opened with fault_injection => true): while `true`,
%% every fsync blocks, as a disk that stops answering; `false` releases them.
-spec inject_sync_hang(handle(), boolean()) -> ok | {error, reason()}.
inject_sync_hang(_Handle, _Hang) -> erlang:nif_error(not_loaded).
