%% ra_meta_bench: strata_ra_log_meta (the binding, erlang/) against
%% dets_log_meta (a reproduction of Ra's DETS-based ra_log_meta), side by
%% side in one BEAM, one run. Results: docs/BENCHMARKS.md (issue 28).
%%
%% Run it with bench/erlang/ra_meta_bench.sh BUILD_DIR [options]; the options
%% are listed in usage/0. Each repetition opens both stores afresh (their own
%% data directories under --dir), loads --servers servers into each (all
%% three fields), then runs every measurement for both stores, alternating
%% which one goes first from one repetition to the next (fetch first, on the
%% stores as loaded, then sync, then cast):
%%
%%  fetch   one process, batches of --fetch-batch calls timed with
%%          erlang:monotonic_time/1 on a shuffled list of the --servers ids:
%%          per-call cost p50/p99 (of the batches' means) for each key, for
%%          both modules, the binding's NIF alone, a plain ets:lookup_element
%%          on a table of the same rows and size, and the same loop calling an
%%          empty function (the loop's own cost, included in every row).
%%  sync    N processes ("servers", each its own UId) call in a loop for
%%          --seconds (after --warmup):
%%            election   store(current_term, T+1), then store_sync(voted_for)
%%                       (Ra's election path; one op = the pair)
%%            voted_for  store_sync(voted_for)
%%            term       store_sync(current_term, T+1)
%%          throughput (ops/s), latency p50/p99 per op, and callers per fsync.
%%  cast    P processes cast store(last_applied) --casts times in all, with
%%          increasing values: the senders' rate, the rate until every last
%%          value is visible to fetch (applied), and the time until one
%%          store_sync issued then returns (durable).
%%  memory  a fresh BEAM per store and repetition: erlang:memory(total) and
%%          VmRSS before and after loading --servers servers with all three
%%          fields (durable), then the store's files once it is stopped.
%%
%% Every figure printed at the end is the median over --runs repetitions.
-module(ra_meta_bench).

-export([main/0, main/1, usage/0, memory_child/1, noop/3]).

-define(IMPLS, [dets, strata]).
-define(HANDLE_KEY, '$strata_ra_log_meta_handle').
-define(NODES, {'rabbit@bench-1', 'rabbit@bench-2', 'rabbit@bench-3'}).

%% ---- entry ----

main() ->
    main(init:get_plain_arguments()).

main(Args) ->
    %% -eval's process traps exits: the workers' exits would pile up in its
    %% mailbox, and every selective receive would scan them.
    process_flag(trap_exit, false),
    Code = try
               run(parse(Args, defaults()))
           catch
               throw:{usage, Msg} ->
                   io:format(standard_error, "~ts~n~ts", [Msg, usage()]),
                   2;
               Class:Reason:Stack ->
                   io:format(standard_error, "ra_meta_bench failed: ~p:~p~n~p~n",
                             [Class, Reason, Stack]),
                   1
           end,
    halt(Code).

defaults() ->
    #{runs => 3, seconds => 3.0, warmup => 0.5, servers => 10000,
      procs => [1, 100, 1000], modes => [election, voted_for, term],
      cast_procs => [10, 1000], casts => 100000,
      fetch_batches => 5000, fetch_batch => 100,
      only => [sync, cast, fetch, memory], dir => "/tmp", keep => false}.

usage() ->
    "usage: ra_meta_bench.sh BUILD_DIR [--beam default|rabbitmq] [options]\n"
    "  --beam B              the BEAM's own flags, or RabbitMQ 3.10.8's (default)\n"
    "  --runs N              repetitions; figures are medians (3)\n"
    "  --seconds S           measured time of a sync cell (3.0)\n"
    "  --warmup S            unmeasured start of a sync cell (0.5)\n"
    "  --servers N           servers loaded into each store; fetch and memory use them (10000)\n"
    "  --procs A,B,..        concurrent store_sync processes (1,100,1000)\n"
    "  --modes M,..          election,voted_for,term\n"
    "  --cast-procs A,B,..   processes casting last_applied (10,1000)\n"
    "  --casts N             casts per cast cell, all processes together (100000)\n"
    "  --fetch-batches N     timed batches per fetch row (5000)\n"
    "  --fetch-batch N       calls per timed batch (100)\n"
    "  --only S,..           sync,cast,fetch,memory\n"
    "  --dir D               where the data directories go; must be a real disk (/tmp)\n"
    "  --keep                keep the data directories\n".

parse([], Opts) -> Opts;
parse(["--keep" | T], Opts) -> parse(T, Opts#{keep => true});
parse([Flag, V | T], Opts) ->
    Opts1 = case Flag of
                "--runs" -> Opts#{runs => int(V)};
                "--seconds" -> Opts#{seconds => num(V)};
                "--warmup" -> Opts#{warmup => num(V)};
                "--servers" -> Opts#{servers => int(V)};
                "--procs" -> Opts#{procs => [int(X) || X <- split(V)]};
                "--modes" -> Opts#{modes => atoms(V, [election, voted_for, term])};
                "--cast-procs" -> Opts#{cast_procs => [int(X) || X <- split(V)]};
                "--casts" -> Opts#{casts => int(V)};
                "--fetch-batches" -> Opts#{fetch_batches => int(V)};
                "--fetch-batch" -> Opts#{fetch_batch => int(V)};
                "--only" -> Opts#{only => atoms(V, [sync, cast, fetch, memory])};
                "--dir" -> Opts#{dir => V};
                _ -> throw({usage, "unknown option " ++ Flag})
            end,
    parse(T, Opts1);
parse([Flag], _) ->
    throw({usage, "option " ++ Flag ++ " needs a value"}).

split(V) -> string:lexemes(V, ",").
int(V) -> list_to_integer(V).
num(V) ->
    try list_to_float(V) catch error:badarg -> float(list_to_integer(V)) end.
atoms(V, Allowed) ->
    [case lists:member(A, Allowed) of
         true -> A;
         false -> throw({usage, "unknown value " ++ X})
     end || X <- split(V), A <- [list_to_atom(X)]].

%% ---- the run ----

run(Opts) ->
    #{runs := Runs, servers := NServers, only := Only, dir := Dir0} = Opts,
    case lists:max(maps:get(procs, Opts) ++ maps:get(cast_procs, Opts)) > NServers of
        true -> throw({usage, "--procs and --cast-procs need as many --servers"});
        false -> ok
    end,
    Dir = filename:join(filename:absname(Dir0), "ra_meta_bench." ++ os:getpid()),
    ok = filelib:ensure_path(Dir),
    header(Opts, Dir),
    Servers = servers(NServers),
    %% fetch first, on the stores as loaded (the sync cells change terms,
    %% which clears the votes: #111).
    Main = [S || S <- [fetch, sync, cast], lists:member(S, Only)],
    Reps = [begin
                Order = order(R),
                io:format("~n== repetition ~b of ~b (~ts first)~n", [R, Runs, hd(Order)]),
                Res1 = case Main of
                           [] -> [];
                           _ -> repetition(Opts, Main, Servers, Order,
                                           filename:join(Dir, integer_to_list(R)))
                       end,
                Res2 = case lists:member(memory, Only) of
                           true -> memory_rep(Opts, Order, filename:join(Dir, integer_to_list(R)));
                           false -> []
                       end,
                Res1 ++ Res2
            end || R <- lists:seq(1, Runs)],
    report(Opts, Reps),
    case maps:get(keep, Opts) of
        true -> io:format("~ndata kept in ~ts~n", [Dir]);
        false -> _ = os:cmd("rm -rf '" ++ Dir ++ "'")
    end,
    0.

order(R) when R rem 2 =:= 1 -> ?IMPLS;
order(_) -> lists:reverse(?IMPLS).

header(Opts, Dir) ->
    io:format("ra_meta_bench: strata_ra_log_meta vs dets_log_meta (Ra's DETS ra_log_meta, "
              "reproduced)~n"),
    io:format("OTP ~s, ERTS ~s, ~b schedulers; data in ~ts (~ts)~n",
              [erlang:system_info(otp_release), erlang:system_info(version),
               erlang:system_info(schedulers_online), Dir,
               string:trim(os:cmd("df --output=fstype '" ++ Dir ++ "' | tail -1"))]),
    io:format("BEAM flags: ~ts~n", [os:getenv("RA_META_BENCH_BEAM", "as given to erl")]),
    io:format("options: ~w~n", [maps:without([dir], Opts)]).

%% One repetition of sync, cast and fetch: both stores open, loaded with the
%% same servers; each measurement runs for both stores, in Order.
repetition(Opts, Sections, Servers, Order, Dir) ->
    Ctx = maps:from_list([{Impl, open(Impl, filename:join(Dir, atom_to_list(Impl)), Servers)}
                          || Impl <- Order]),
    try
        lists:append([section(S, Opts, Servers, Order, Ctx) || S <- Sections])
    after
        [close(Impl, maps:get(Impl, Ctx)) || Impl <- Order]
    end.

section(sync, #{procs := Procs, modes := Modes} = Opts, Servers, Order, Ctx) ->
    [begin
         R = sync_cell(Impl, maps:get(Impl, Ctx), Mode, N, Servers, Opts),
         io:format("sync  ~-9s ~5b procs  ~-6s ~10s ops/s  p50 ~9.1f us  p99 ~9.1f us  "
                   "~7.1f callers/fsync~n",
                   [Mode, N, Impl, g(maps:get(ops_s, R)), maps:get(p50_us, R),
                    maps:get(p99_us, R), maps:get(per_fsync, R)]),
         {{sync, Mode, N, Impl}, R}
     end || Mode <- Modes, N <- Procs, Impl <- Order];
section(cast, #{cast_procs := Procs, casts := Casts}, Servers, Order, Ctx) ->
    [begin
         R = cast_cell(Impl, maps:get(Impl, Ctx), P, Casts, Servers),
         io:format("cast  ~5b procs  ~-6s sent ~10s casts/s  applied ~10s casts/s  "
                   "durable after ~8.1f ms~n",
                   [P, Impl, g(maps:get(sent_s, R)), g(maps:get(applied_s, R)),
                    maps:get(durable_ms, R)]),
         {{cast, P, Impl}, R}
     end || P <- Procs, Impl <- Order];
section(fetch, Opts, Servers, Order, Ctx) ->
    fetch_section(Opts, Servers, Order, Ctx).

%% ---- the stores ----

name(dets) -> ra_meta_bench_dets;
name(strata) -> ra_meta_bench_strata.

cfg(Impl, Dir) ->
    #{name => ra_meta_bench, data_dir => Dir, names => #{log_meta => name(Impl)}}.

%% Opens Impl's store in a fresh Dir and loads Servers into it (durably).
open(Impl, Dir, Servers) ->
    _ = os:cmd("rm -rf '" ++ Dir ++ "'"),
    ok = filelib:ensure_path(Dir),
    Name = name(Impl),
    {ok, Pid} = start(Impl, cfg(Impl, Dir)),
    unlink(Pid),
    load(Impl, Name, Servers),
    check(Impl, Name, Servers),
    #{name => Name, dir => Dir, pid => Pid}.

start(dets, Cfg) -> dets_log_meta:start_link(Cfg);
start(strata, Cfg) -> strata_ra_log_meta:start_link(Cfg).

close(dets, #{name := Name}) -> ok = dets_log_meta:stop(Name);
close(strata, #{name := Name}) -> ok = strata_ra_log_meta:stop(Name).

store(dets) -> fun dets_log_meta:store/4;
store(strata) -> fun strata_ra_log_meta:store/4.

store_sync(dets) -> fun dets_log_meta:store_sync/4;
store_sync(strata) -> fun strata_ra_log_meta:store_sync/4.

fetch_fun(dets) -> fun dets_log_meta:fetch/3;
fetch_fun(strata) -> fun strata_ra_log_meta:fetch/3.

%% Every server with all three fields, as a Ra server has them: its term, its
%% vote for a peer of its cluster ({ClusterName, Node}), its applied index.
%% Cast, with a store_sync after every 100 servers (a burst of 30 000 casts
%% would measure the DETS process's mailbox, not the store).
load(Impl, Name, Servers) ->
    Store = store(Impl),
    Sync = store_sync(Impl),
    lists:foreach(fun({I, UId, QName}) ->
                          ok = Store(Name, UId, current_term, 1),
                          ok = Store(Name, UId, voted_for, {QName, node_of(I)}),
                          case I rem 100 =:= 0 of
                              true -> ok = Sync(Name, UId, last_applied, 1000 + I);
                              false -> ok = Store(Name, UId, last_applied, 1000 + I)
                          end
                  end, Servers),
    {I, UId, _} = lists:last(Servers),
    ok = Sync(Name, UId, last_applied, 1000 + I).

%% A few values read back, and the #111 rule, so that both stores are seen
%% to hold the same thing.
check(Impl, Name, Servers) ->
    Fetch = fetch_fun(Impl),
    lists:foreach(fun({I, UId, QName}) ->
                          1 = Fetch(Name, UId, current_term),
                          {QName, _} = Fetch(Name, UId, voted_for),
                          Applied = 1000 + I,
                          Applied = Fetch(Name, UId, last_applied)
                  end, [hd(Servers), lists:last(Servers)]),
    UId = <<"ra_meta_bench_check">>,
    Sync = store_sync(Impl),
    ok = Sync(Name, UId, voted_for, {check, 'rabbit@bench-1'}),
    ok = Sync(Name, UId, current_term, 2),
    undefined = Fetch(Name, UId, voted_for),
    ok.

node_of(I) -> element(1 + I rem 3, ?NODES).

%% Ra's UIds: a prefix from the cluster name and 12 random characters
%% (fixed seed: the same ids every run).
servers(N) ->
    S0 = rand:seed_s(exsss, {28, 28, 28}),
    {L, _} = lists:mapfoldl(
               fun(I, S) ->
                       {Suffix, S1} = random_chars(12, S, []),
                       Q = "%2F_qq" ++ integer_to_list(I),
                       {{I, iolist_to_binary([Q, "_", Suffix]), list_to_atom(Q)}, S1}
               end, S0, lists:seq(1, N)),
    L.

random_chars(0, S, Acc) -> {Acc, S};
random_chars(K, S, Acc) ->
    {X, S1} = rand:uniform_s(36, S),
    C = case X =< 26 of true -> $A + X - 1; false -> $0 + X - 27 end,
    random_chars(K - 1, S1, [C | Acc]).

%% Group commit counters: callers answered and fsyncs (rounds) behind them.
sync_counters(dets, Name) ->
    #{calls := C, syncs := S} = dets_log_meta:stats(Name),
    {C, S};
sync_counters(strata, Name) ->
    #{sync_replies := C, sync_rounds := S} = strata_ra_log_meta:stats(Name),
    {C, S}.

now_ns() -> erlang:monotonic_time(nanosecond).

%% ---- sync: N servers calling store_sync in a loop ----

sync_cell(Impl, #{name := Name}, Mode, N, Servers, #{seconds := Secs, warmup := Warm}) ->
    Self = self(),
    Store = store(Impl),
    Sync = store_sync(Impl),
    Fetch = fetch_fun(Impl),
    Workers = [spawn_link(fun() -> sync_worker(Self, Name, Mode, S, Store, Sync, Fetch) end)
               || S <- lists:sublist(Servers, N)],
    {C0, S0} = sync_counters(Impl, Name),
    Start = now_ns() + 20000000,  % 20 ms for every worker to be waiting
    From = Start + round(Warm * 1.0e9),
    Until = From + round(Secs * 1.0e9),
    [W ! {go, Start, From, Until} || W <- Workers],
    Results = [receive {done, _, Count, Lats} -> {Count, Lats} end || _ <- Workers],
    {C1, S1} = sync_counters(Impl, Name),
    Count = lists:sum([C || {C, _} <- Results]),
    Lats = list_to_tuple(lists:sort(lists:append([L || {_, L} <- Results]))),
    #{ops_s => Count / Secs,
      p50_us => pct(Lats, 50) / 1000,
      p99_us => pct(Lats, 99) / 1000,
      per_fsync => (C1 - C0) / max(1, S1 - S0)}.

sync_worker(Parent, Name, Mode, {I, UId, QName}, Store, Sync, Fetch) ->
    Term0 = Fetch(Name, UId, current_term),
    receive {go, Start, From, Until} -> ok end,
    wait_until(Start),
    Op = case Mode of
             election ->
                 fun(K) ->
                         ok = Store(Name, UId, current_term, Term0 + K),
                         ok = Sync(Name, UId, voted_for, {QName, node_of(I + K)})
                 end;
             voted_for ->
                 fun(K) -> ok = Sync(Name, UId, voted_for, {QName, node_of(I + K)}) end;
             term ->
                 fun(K) -> ok = Sync(Name, UId, current_term, Term0 + K) end
         end,
    {Count, Lats} = sync_loop(Op, 1, From, Until, 0, []),
    Parent ! {done, self(), Count, Lats}.

sync_loop(Op, K, From, Until, Count, Lats) ->
    T0 = now_ns(),
    case T0 >= Until of
        true ->
            {Count, Lats};
        false ->
            Op(K),
            T1 = now_ns(),
            case T0 >= From of
                true -> sync_loop(Op, K + 1, From, Until, Count + 1, [T1 - T0 | Lats]);
                false -> sync_loop(Op, K + 1, From, Until, Count, Lats)
            end
    end.

wait_until(T) ->
    case (T - now_ns()) div 1000000 of
        Ms when Ms > 1 -> timer:sleep(Ms - 1), wait_until(T);
        _ -> spin_until(T)
    end.

spin_until(T) ->
    case now_ns() >= T of
        true -> ok;
        false -> spin_until(T)
    end.

%% ---- cast: last_applied casts from P processes ----

cast_cell(Impl, #{name := Name}, P, Casts, Servers) ->
    Self = self(),
    Store = store(Impl),
    Fetch = fetch_fun(Impl),
    K = max(1, Casts div P),
    Workers = [spawn_link(fun() -> cast_worker(Self, Name, S, K, Store, Fetch) end)
               || S <- lists:sublist(Servers, P)],
    Start = now_ns() + 20000000,
    [W ! {go, Start} || W <- Workers],
    Sent = [receive {sent, _, UId, Last, T} -> {UId, Last, T} end || _ <- Workers],
    SentAt = lists:max([T || {_, _, T} <- Sent]),
    _Polls = lists:sum([await_value(Fetch, Name, UId, Last, 0) || {UId, Last, _} <- Sent]),
    AppliedAt = now_ns(),
    {UId1, Last1, _} = hd(Sent),
    ok = (store_sync(Impl))(Name, UId1, last_applied, Last1),
    DurableAt = now_ns(),
    Total = K * P,
    #{sent_s => Total / ((SentAt - Start) / 1.0e9),
      applied_s => Total / ((AppliedAt - Start) / 1.0e9),
      durable_ms => (DurableAt - Start) / 1.0e6}.

cast_worker(Parent, Name, {_I, UId, _}, K, Store, Fetch) ->
    Base = Fetch(Name, UId, last_applied),
    receive {go, Start} -> ok end,
    wait_until(Start),
    cast_loop(Store, Name, UId, Base + 1, Base + K),
    Parent ! {sent, self(), UId, Base + K, now_ns()}.

cast_loop(Store, Name, UId, V, Last) when V =< Last ->
    ok = Store(Name, UId, last_applied, V),
    cast_loop(Store, Name, UId, V + 1, Last);
cast_loop(_, _, _, _, _) ->
    ok.

%% Values only grow: waits until UId's last_applied is Last.
await_value(Fetch, Name, UId, Last, Polls) ->
    case Fetch(Name, UId, last_applied) of
        Last -> Polls;
        _ -> receive after 1 -> await_value(Fetch, Name, UId, Last, Polls + 1) end
    end.

%% ---- fetch: per-call cost ----

fetch_section(#{fetch_batches := Batches, fetch_batch := B}, Servers, Order, Ctx) ->
    Ids = shuffled_ids(Servers),
    %% The baseline: a plain ETS table with the same rows, same size.
    Plain = ets:new(ra_meta_bench_plain, [set, public, {read_concurrency, true}]),
    true = ets:insert(Plain, [{UId, 1, {QName, node_of(I)}, 1000 + I}
                              || {I, UId, QName} <- Servers]),
    #{name := DetsName} = maps:get(dets, Ctx),
    #{name := StrataName} = maps:get(strata, Ctx),
    Handle = ets:lookup_element(StrataName, ?HANDLE_KEY, 2),
    %% Every row reads real votes, not `undefined`.
    {_, UId1, _} = hd(Servers),
    {_, _} = ets:lookup_element(Plain, UId1, 3),
    {_, _} = dets_log_meta:fetch(DetsName, UId1, voted_for),
    {_, _} = strata_ra_log_meta:fetch(StrataName, UId1, voted_for),
    {_, _} = strata_ra_nif:fetch(Handle, UId1, voted_for),
    Rows = [{ets, Plain}, {dets, DetsName}, {strata, StrataName}, {strata_nif, Handle},
            {loop, none}],
    %% Alternate the order of the rows as the repetitions alternate the stores.
    Rows1 = case hd(Order) of dets -> Rows; strata -> lists:reverse(Rows) end,
    Res = lists:append(
            [begin
                 PerRow = fetch_samples(Rows1, Key, Ids, Batches, B),
                 [begin
                      Samples = maps:get(Row, PerRow),
                      R = #{p50_ns => pct(Samples, 50), p99_ns => pct(Samples, 99)},
                      io:format("fetch ~-12s ~-10s p50 ~7.1f ns  p99 ~7.1f ns~n",
                                [Key, Row, maps:get(p50_ns, R), maps:get(p99_ns, R)]),
                      {{fetch, Key, Row}, R}
                  end || {Row, _} <- Rows1]
             end || Key <- [current_term, voted_for, last_applied]]),
    ets:delete(Plain),
    Res.

shuffled_ids(Servers) ->
    S0 = rand:seed_s(exsss, {1, 2, 3}),
    {Keyed, _} = lists:mapfoldl(fun({_, UId, _}, S) ->
                                        {X, S1} = rand:uniform_s(S),
                                        {{X, UId}, S1}
                                end, S0, Servers),
    list_to_tuple([UId || {_, UId} <- lists:sort(Keyed)]).

pos(current_term) -> 2;
pos(voted_for) -> 3;
pos(last_applied) -> 4.

%% Per row, the sorted per-call means (ns) of Batches batches of B calls
%% (rounded down to whole passes over the ids). The rows take turns (each round in the other order), a pass over the ids
%% at a time, each pass after an untimed one: every row reads from a cache
%% it has warmed itself, as when one row ran all its batches in a row, but a
%% change in the machine's speed over the cell (on a shared VM, within
%% seconds) weighs on every row alike rather than on whichever row ran then.
fetch_samples(Rows, Key, Ids, Batches, B) ->
    N = tuple_size(Ids),
    PerPass = max(1, N div B),
    Pass = fun({Row, Arg}, Acc) ->
                   _ = fetch_batch(Row, Arg, Key, Ids, N, 1, N),
                   {_, Xs} = lists:foldl(
                               fun(_, {I, Xs0}) ->
                                       T0 = erlang:monotonic_time(nanosecond),
                                       I1 = fetch_batch(Row, Arg, Key, Ids, N, I, B),
                                       T1 = erlang:monotonic_time(nanosecond),
                                       {I1, [(T1 - T0) / B | Xs0]}
                               end, {1, maps:get(Row, Acc)}, lists:seq(1, PerPass)),
                   Acc#{Row => Xs}
           end,
    Round = fun(K, Acc) ->
                    Order = case K rem 2 of 0 -> Rows; 1 -> lists:reverse(Rows) end,
                    lists:foldl(Pass, Acc, Order)
            end,
    PerRow = lists:foldl(Round, maps:from_list([{Row, []} || {Row, _} <- Rows]),
                         lists:seq(1, max(1, Batches div PerPass))),
    maps:map(fun(_, Xs) -> list_to_tuple(lists:sort(Xs)) end, PerRow).

%% One loop per row, all of the same shape: the same index arithmetic and
%% one remote call per iteration.
fetch_batch(ets, Tab, Key, Ids, N, I, B) -> f_ets(B, I, Ids, N, Tab, pos(Key));
fetch_batch(dets, Name, Key, Ids, N, I, B) -> f_dets(B, I, Ids, N, Name, Key);
fetch_batch(strata, Name, Key, Ids, N, I, B) -> f_strata(B, I, Ids, N, Name, Key);
fetch_batch(strata_nif, H, Key, Ids, N, I, B) -> f_nif(B, I, Ids, N, H, Key);
fetch_batch(loop, X, Key, Ids, N, I, B) -> f_loop(B, I, Ids, N, X, Key).

-define(NEXT(I, N), case I of N -> 1; _ -> I + 1 end).

f_ets(0, I, _, _, _, _) -> I;
f_ets(C, I, Ids, N, Tab, Pos) ->
    _ = ets:lookup_element(Tab, element(I, Ids), Pos),
    f_ets(C - 1, ?NEXT(I, N), Ids, N, Tab, Pos).

f_dets(0, I, _, _, _, _) -> I;
f_dets(C, I, Ids, N, Name, Key) ->
    _ = dets_log_meta:fetch(Name, element(I, Ids), Key),
    f_dets(C - 1, ?NEXT(I, N), Ids, N, Name, Key).

f_strata(0, I, _, _, _, _) -> I;
f_strata(C, I, Ids, N, Name, Key) ->
    _ = strata_ra_log_meta:fetch(Name, element(I, Ids), Key),
    f_strata(C - 1, ?NEXT(I, N), Ids, N, Name, Key).

f_nif(0, I, _, _, _, _) -> I;
f_nif(C, I, Ids, N, H, Key) ->
    _ = strata_ra_nif:fetch(H, element(I, Ids), Key),
    f_nif(C - 1, ?NEXT(I, N), Ids, N, H, Key).

f_loop(0, I, _, _, _, _) -> I;
f_loop(C, I, Ids, N, X, Key) ->
    _ = ra_meta_bench:noop(X, element(I, Ids), Key),
    f_loop(C - 1, ?NEXT(I, N), Ids, N, X, Key).

noop(_, _, _) -> ok.

%% ---- memory: a fresh BEAM per store ----

memory_rep(#{servers := N}, Order, Dir) ->
    [begin
         D = filename:join(Dir, "memory_" ++ atom_to_list(Impl)),
         _ = os:cmd("rm -rf '" ++ D ++ "'"),
         R = memory_run(Impl, D, N),
         io:format("memory ~-6s ~b servers: BEAM +~.1f MiB (ets +~.1f MiB), VmRSS +~.1f MiB, "
                   "files ~.1f MiB (~.1f MiB allocated)~n",
                   [Impl, N, mib(maps:get(beam_delta, R)), mib(maps:get(ets_delta, R)),
                    mib(maps:get(rss_delta, R)), mib(maps:get(file_bytes, R)),
                    mib(maps:get(file_alloc, R))]),
         {{memory, Impl}, R}
     end || Impl <- Order].

mib(Bytes) -> Bytes / 1048576.

%% A rounded figure with its thousands apart, as docs/BENCHMARKS.md writes
%% them: 12 345.
g(X) ->
    S = integer_to_list(abs(round(X))),
    Sign = case round(X) < 0 of true -> "-"; false -> "" end,
    Sign ++ lists:reverse(group(lists:reverse(S))).

group([A, B, C, D | T]) -> [A, B, C, $\s | group([D | T])];
group(T) -> T.

memory_run(Impl, Dir, N) ->
    Erl = filename:join([code:root_dir(), "bin", "erl"]),
    Paths = lists:usort([filename:dirname(code:which(M))
                         || M <- [?MODULE, dets_log_meta, strata_ra_log_meta]]),
    Cmd = lists:flatten(
            [Erl, " -noshell",
             [[" -pa '", P, "'"] || P <- Paths],
             " -eval 'ra_meta_bench:memory_child([\"", atom_to_list(Impl), "\", \"", Dir,
             "\", \"", integer_to_list(N), "\"])' 2>&1"]),
    Out = os:cmd(Cmd),
    case [L || L <- string:split(Out, "\n", all), string:prefix(L, "RESULT ") =/= nomatch] of
        [Line] ->
            {ok, Toks, _} = erl_scan:string(string:prefix(Line, "RESULT ") ++ "."),
            {ok, Term} = erl_parse:parse_term(Toks),
            Term;
        _ ->
            error({memory_child_failed, Impl, Out})
    end.

memory_child([ImplS, Dir, NS]) ->
    Impl = list_to_atom(ImplS),
    N = list_to_integer(NS),
    %% Code of both stores (and of dets) loaded before: only data is measured.
    [{module, _} = code:ensure_loaded(M)
     || M <- [dets, dets_server, dets_sup, dets_v9, dets_utils, file_sorter,
              dets_log_meta, strata_ra_log_meta, strata_ra_nif]],
    Servers = servers(N),
    ok = filelib:ensure_path(Dir),
    Name = name(Impl),
    B = snapshot(),
    {ok, _Pid} = start(Impl, cfg(Impl, Dir)),
    load(Impl, Name, Servers),
    A = snapshot(),
    close(Impl, #{name => Name}),
    Files = [{F, filelib:file_size(F)} || F <- filelib:wildcard(filename:join(Dir, "**"))
                                             , filelib:is_regular(F)],
    AllocKiB = list_to_integer(hd(string:lexemes(os:cmd("du -sk '" ++ Dir ++ "'"), "\t\n "))),
    io:format("RESULT ~w~n",
              [#{beam_delta => maps:get(total, A) - maps:get(total, B),
                 ets_delta => maps:get(ets, A) - maps:get(ets, B),
                 rss_delta => maps:get(rss, A) - maps:get(rss, B),
                 rss_before => maps:get(rss, B),
                 rss_after => maps:get(rss, A),
                 file_bytes => lists:sum([S || {_, S} <- Files]),
                 file_alloc => AllocKiB * 1024,
                 files => [{list_to_binary(filename:basename(F)), S} || {F, S} <- Files]}]),
    halt(0).

snapshot() ->
    [garbage_collect(P) || P <- processes()],
    timer:sleep(200),
    #{total => erlang:memory(total), ets => erlang:memory(ets), rss => rss()}.

rss() ->
    {ok, Status} = file:read_file("/proc/self/status"),
    [_, Rest] = binary:split(Status, <<"VmRSS:">>),
    [KiB | _] = string:lexemes(binary_to_list(Rest), " \t\nk"),
    list_to_integer(KiB) * 1024.

%% ---- the report: medians over the repetitions ----

pct(Sorted, P) when tuple_size(Sorted) > 0 ->
    element(max(1, min(tuple_size(Sorted), ceil(P / 100 * tuple_size(Sorted)))), Sorted);
pct(_, _) ->
    0.0.

median(Xs) ->
    S = lists:sort(Xs),
    L = length(S),
    case L rem 2 of
        1 -> lists:nth(L div 2 + 1, S);
        0 -> (lists:nth(L div 2, S) + lists:nth(L div 2 + 1, S)) / 2
    end.

%% Median of Field for Key over the repetitions.
med(Reps, Key, Field) ->
    median([maps:get(Field, proplists:get_value(Key, Rep)) || Rep <- Reps]).

report(Opts, Reps) ->
    Only = maps:get(only, Opts),
    io:format("~n== medians of ~b repetition(s)~n", [length(Reps)]),
    case lists:member(sync, Only) of
        true -> report_sync(Opts, Reps);
        false -> ok
    end,
    case lists:member(cast, Only) of
        true -> report_cast(Opts, Reps);
        false -> ok
    end,
    case lists:member(fetch, Only) of
        true -> report_fetch(Reps);
        false -> ok
    end,
    case lists:member(memory, Only) of
        true -> report_memory(Opts, Reps);
        false -> ok
    end.

report_sync(#{procs := Procs, modes := Modes}, Reps) ->
    io:format("~nstore_sync (op = ~s)~n", ["election: store(term) + store_sync(vote)"]),
    io:format("| op | servers | DETS ops/s | strata ops/s | ratio | DETS p50 / p99 us | "
              "strata p50 / p99 us | callers per fsync DETS / strata |~n"),
    [begin
         M = fun(Impl, F) -> med(Reps, {sync, Mode, N, Impl}, F) end,
         io:format("| ~s | ~b | ~s | ~s | ~.1fx | ~s / ~s | ~s / ~s | ~.1f / ~.1f |~n",
                   [Mode, N, g(M(dets, ops_s)), g(M(strata, ops_s)),
                    M(strata, ops_s) / M(dets, ops_s),
                    g(M(dets, p50_us)), g(M(dets, p99_us)), g(M(strata, p50_us)),
                    g(M(strata, p99_us)),
                    M(dets, per_fsync), M(strata, per_fsync)])
     end || Mode <- Modes, N <- Procs],
    ok.

report_cast(#{cast_procs := Procs, casts := Casts}, Reps) ->
    io:format("~nstore (cast) of last_applied, ~b casts per cell~n", [Casts]),
    io:format("| senders | DETS sent/s | strata sent/s | DETS applied/s | strata applied/s | "
              "DETS durable ms | strata durable ms |~n"),
    [begin
         M = fun(Impl, F) -> med(Reps, {cast, P, Impl}, F) end,
         io:format("| ~b | ~s | ~s | ~s | ~s | ~.1f | ~.1f |~n",
                   [P, g(M(dets, sent_s)), g(M(strata, sent_s)), g(M(dets, applied_s)),
                    g(M(strata, applied_s)), M(dets, durable_ms), M(strata, durable_ms)])
     end || P <- Procs],
    ok.

report_fetch(Reps) ->
    io:format("~nfetch, ns per call (median of the repetitions' p50 / p99 of batch means)~n"),
    io:format("| key | ets:lookup_element | DETS (Ra's fetch) | strata_ra_log_meta | "
              "strata_ra_nif | empty loop | strata / ets (p50) |~n"),
    [begin
         M = fun(Row, F) -> med(Reps, {fetch, Key, Row}, F) end,
         io:format("| ~s | ~s / ~s | ~s / ~s | ~s / ~s | ~s / ~s | "
                   "~s / ~s | ~.2f |~n",
                   [Key, g(M(ets, p50_ns)), g(M(ets, p99_ns)), g(M(dets, p50_ns)),
                    g(M(dets, p99_ns)), g(M(strata, p50_ns)), g(M(strata, p99_ns)),
                    g(M(strata_nif, p50_ns)), g(M(strata_nif, p99_ns)), g(M(loop, p50_ns)),
                    g(M(loop, p99_ns)),
                    M(strata, p50_ns) / M(ets, p50_ns)])
     end || Key <- [current_term, voted_for, last_applied]],
    ok.

report_memory(#{servers := N}, Reps) ->
    io:format("~nmemory, ~b servers with all three fields (MiB)~n", [N]),
    io:format("| store | erlang:memory(total) delta | of it ETS | VmRSS delta | "
              "files (apparent) | files (allocated) |~n"),
    [begin
         M = fun(F) -> mib(med(Reps, {memory, Impl}, F)) end,
         io:format("| ~s | ~.2f | ~.2f | ~.2f | ~.2f | ~.2f |~n",
                   [Impl, M(beam_delta), M(ets_delta), M(rss_delta), M(file_bytes),
                    M(file_alloc)])
     end || Impl <- ?IMPLS],
    [begin
         {_, #{files := Files}} = lists:keyfind({memory, Impl}, 1, hd(Reps)),
         io:format("~s files (first repetition): ~p~n", [Impl, Files])
     end || Impl <- ?IMPLS],
    ok.
