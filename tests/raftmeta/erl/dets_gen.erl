%% Writes real DETS files with Erlang/OTP for strata's DETS reader tests, and
%% prints what Erlang itself reads back, as an independent oracle.
%%
%% Run as:  erl -noshell -pa BEAMDIR -eval 'dets_gen:main()' -extra CMD K=V ...
%% Exit status 0 on success; 2 with a message on stderr on failure.
%%
%% Row lines (the "expected" files) describe one Ra meta row each, with every
%% byte string in hex so that the C++ side can compare without an Erlang term
%% printer:
%%   bin:<uid hex> <term> <voted_for> <last_applied>
%% where <term>/<last_applied> are decimal or "undefined", and <voted_for> is
%% "none", "atom:<utf8 hex>" or "id:<name utf8 hex>,<node utf8 hex>".
-module(dets_gen).
-export([main/0]).

main() ->
    [Cmd | KVs] = init:get_plain_arguments(),
    Opts = maps:from_list([split_kv(KV) || KV <- KVs]),
    try run(Cmd, Opts) of
        _ -> erlang:halt(0)
    catch
        C:R:St ->
            io:format(standard_error, "dets_gen ~s failed: ~p:~p~n~p~n", [Cmd, C, R, St]),
            erlang:halt(2)
    end.

split_kv(KV) ->
    [K, V] = string:split(KV, "="),
    {list_to_atom(K), V}.

opt(K, Opts) -> maps:get(K, Opts).
opt(K, Opts, Default) -> maps:get(K, Opts, Default).
int_opt(K, Opts, Default) -> list_to_integer(opt(K, Opts, integer_to_list(Default))).

open(File, Extra) ->
    _ = file:delete(File),
    {ok, T} = dets:open_file(make_ref(), [{file, File}, {type, set} | Extra]),
    T.

%% ---- commands ----

%% A Ra-like meta table: N generated rows, optionally churned (updates that
%% move collections, deletes that free them), finished by a clean close, a
%% halt without close (file left "not properly closed"), or a wait for the
%% test to kill -9 the VM.
run("ra", Opts) ->
    File = opt(file, Opts),
    N = int_opt(n, Opts, 10),
    rand:seed(exsss, {int_opt(seed, Opts, 1), 7, 11}),
    Extra = case int_opt(min_slots, Opts, 0) of
                0 -> [];
                M -> [{min_no_slots, M}]
            end,
    T = open(File, Extra),
    Rows0 = [ra_row(I) || I <- lists:seq(1, N)],
    ok = dets:insert(T, Rows0),
    Map0 = maps:from_list([{element(1, R), R} || R <- Rows0]),
    Map = case opt(churn, Opts, "false") of
              "true" -> churn(T, Map0, Opts);
              "false" -> Map0
          end,
    ok = write_rows(opt(expected, Opts), maps:values(Map)),
    finish(T, opt(finish, Opts, "close"));

%% A table that grew after DETS last wrote its header: N rows, dets:sync
%% (header written, file clean), then every row updated in one batch. DETS
%% counts updates as possible new keys and adds segments, but the key count
%% does not change, so the header (and its `next`) is not rewritten before
%% the VM halts.
run("grown", Opts) ->
    T = open(opt(file, Opts), []),
    N = int_opt(n, Opts, 1000),
    rand:seed(exsss, {int_opt(seed, Opts, 1), 1, 2}),
    Rows = [ra_row(I) || I <- lists:seq(1, N)],
    ok = dets:insert(T, Rows),
    ok = dets:sync(T),
    Updated = [{U, bump(Term), voted_for(I + 1), bump(A)}
               || {I, {U, Term, _, A}} <- lists:zip(lists:seq(1, N), Rows)],
    ok = dets:insert(T, Updated),
    ok = write_rows(opt(expected, Opts), Updated),
    finish(T, "halt");

%% Hand-picked rows covering every form a Ra row can take.
run("fixed", Opts) ->
    T = open(opt(file, Opts), []),
    Rows = fixed_rows(),
    ok = dets:insert(T, Rows),
    ok = write_rows(opt(expected, Opts), Rows),
    finish(T, opt(finish, Opts, "close"));

run("empty", Opts) ->
    T = open(opt(file, Opts), [{keypos, int_opt(keypos, Opts, 1)}]),
    finish(T, "close");

%% A bag table (Ra's table is a set): the reader must refuse it.
run("bag", Opts) ->
    File = opt(file, Opts),
    _ = file:delete(File),
    {ok, T} = dets:open_file(make_ref(), [{file, File}, {type, bag}]),
    ok = dets:insert(T, [{<<"u1">>, 1, undefined, 1}, {<<"u1">>, 2, undefined, 2}]),
    finish(T, "close");

%% Generic (non-Ra) objects for the DETS layer: integer keys, payloads of
%% 1 to max_payload bytes (up to collections far larger than one read
%% window). Each object is summarised as the ~w line of
%% {Key, PayloadSize, PayloadByte, List, String} (the C++ term printer
%% follows ~w for these terms).
run("generic", Opts) ->
    T = open(opt(file, Opts), []),
    N = int_opt(n, Opts, 100),
    Max = int_opt(max_payload, Opts, 100000),
    rand:seed(exsss, {int_opt(seed, Opts, 1), 3, 5}),
    Objs = [{I, binary:copy(<<(I rem 251)>>, rand:uniform(Max)), [I | tail], "str"}
            || I <- lists:seq(1, N)],
    ok = dets:insert(T, Objs),
    ok = file:write_file(
           opt(expected, Opts),
           [io_lib:format("~w~n", [{I, byte_size(B), binary:first(B), L, S}])
            || {I, B, L, S} <- Objs]),
    finish(T, opt(finish, Opts, "close"));

%% One file per malformed-row case, each with a few good rows around the bad
%% one, in directory Dir: Dir/<case>.dets.
run("shapes", Opts) ->
    Dir = opt(dir, Opts),
    lists:foreach(
      fun({Case, Bad}) ->
              T = open(filename:join(Dir, atom_to_list(Case) ++ ".dets"), []),
              ok = dets:insert(T, [{<<"good1">>, 1, undefined, 1}, Bad,
                                   {<<"good2">>, 2, {a, b}, 2}]),
              ok = dets:close(T)
      end, bad_rows());

%% ETF samples: one line per term, "<hex of term_to_binary>\t<~w>\t<kind>".
run("terms", Opts) ->
    Lines = [[binary:encode_hex(term_to_binary(Term)), $\t,
              io_lib:format("~w", [Term]), $\t, atom_to_list(Kind), $\n]
             || {Kind, Term} <- sample_terms()],
    ok = file:write_file(opt(out, Opts), Lines);

%% What DETS itself reads from File (repairing a copy if it was not closed
%% properly), as row lines; Mode = rows | terms.
run("dump", Opts) ->
    File = opt(file, Opts),
    {ok, T} = dets:open_file(make_ref(), [{file, File}, {type, set}]),
    Objs = dets:foldl(fun(O, Acc) -> [O | Acc] end, [], T),
    ok = dets:close(T),
    case opt(mode, Opts, "rows") of
        "rows" -> ok = write_rows(opt(out, Opts), Objs);
        "terms" -> ok = write_terms(opt(out, Opts), Objs)
    end.

finish(T, "close") ->
    ok = dets:close(T);
finish(T, "halt") ->
    %% Halting without dets:close leaves the header marked "not properly
    %% closed", as after a crash of Ra's node.
    flush(T),
    erlang:halt(0);
finish(T, "wait") ->
    flush(T),
    io:format("ready~n"),
    timer:sleep(infinity).

%% Puts every row on disk: a lookup of an absent key makes DETS write its
%% cache; the DETS server answers the lookup before it writes, so a second
%% request (served after the write) is what waits for the write.
flush(T) ->
    [] = dets:lookup(T, make_ref()),
    _ = dets:info(T, size),
    ok.

%% ---- row generation ----

ra_row(I) ->
    {uid(I),
     maybe_undefined(I rem 11 =:= 0, rand_int()),
     voted_for(I),
     maybe_undefined(I rem 13 =:= 0, rand_int())}.

uid(I) ->
    Rand = crypto_free_bytes(rand:uniform(24) - 1),
    <<"uid_", (integer_to_binary(I))/binary, "_", Rand/binary>>.

crypto_free_bytes(N) -> << <<(rand:uniform(256) - 1)>> || _ <- lists:seq(1, N) >>.

maybe_undefined(true, _) -> undefined;
maybe_undefined(false, V) -> V.

rand_int() ->
    case rand:uniform(5) of
        1 -> rand:uniform(256) - 1;
        2 -> rand:uniform(1 bsl 31) - 1;
        3 -> rand:uniform(1 bsl 32) + (1 bsl 31);
        4 -> rand:uniform(1 bsl 63) - 1;
        5 -> (1 bsl 64) - rand:uniform(1 bsl 62)
    end.

voted_for(I) ->
    case I rem 3 of
        0 -> undefined;
        1 -> name_atom(I);
        2 -> {name_atom(I), node_atom(I)}
    end.

name_atom(I) ->
    case I rem 5 of
        0 -> list_to_atom([16#441, 16#435, 16#440, 16#432, $_ | integer_to_list(I)]);
        1 -> list_to_atom("caf" ++ [16#E9, $_ | integer_to_list(I)]);
        _ -> list_to_atom("ra_server_" ++ integer_to_list(I))
    end.

node_atom(I) ->
    case I rem 7 of
        0 -> list_to_atom([16#6F22, 16#5B57, $@, $h | integer_to_list(I rem 4)]);
        _ -> list_to_atom("rabbit@host" ++ integer_to_list(I rem 4))
    end.

churn(T, Map0, Opts) ->
    Keys = lists:sort(maps:keys(Map0)),
    Updated = lists:foldl(
                fun(K, M) ->
                        case rand:uniform(3) of
                            1 ->
                                {K, Term, _, Applied} = maps:get(K, M),
                                New = {K, bump(Term), voted_for(rand:uniform(1000)),
                                       bump(Applied)},
                                ok = dets:insert(T, New),
                                M#{K => New};
                            _ -> M
                        end
                end, Map0, Keys),
    Deleted = [K || K <- Keys, rand:uniform(5) =:= 1],
    lists:foreach(fun(K) -> ok = dets:delete(T, K) end, Deleted),
    Extra = int_opt(extra_after_churn, Opts, 0),
    More = [ra_row(I) || I <- lists:seq(1000000, 1000000 + Extra - 1)],
    ok = dets:insert(T, More),
    M1 = maps:without(Deleted, Updated),
    maps:merge(M1, maps:from_list([{element(1, R), R} || R <- More])).

bump(undefined) -> 1;
bump(V) when V < (1 bsl 64) - 1 -> V + 1;
bump(V) -> V.

fixed_rows() ->
    [{<<"plain">>, 1, undefined, 0},
     {<<>>, 0, undefined, 0},
     {<< <<B>> || B <- lists:seq(0, 255) >>, 7, legacy_name, 3},
     {<<"bare">>, 42, ra_server_1, 41},
     {<<"tuple">>, 43, {ra_server_2, 'rabbit@host-a'}, 40},
     {<<"unicode">>, 5, {'сервер', '节点@主机'}, 6},
     {<<"latin1">>, 5, 'café', 6},
     {<<"quoted">>, 5, {'Name With Spaces', 'node@10.0.0.1'}, 6},
     {<<"all_undefined">>, undefined, undefined, undefined},
     {<<"term_undefined">>, undefined, {a, b}, 9},
     {<<"applied_undefined">>, 3, c, undefined},
     {<<"near_2_63">>, (1 bsl 63) - 1, undefined, 1 bsl 63},
     {<<"u64_max">>, (1 bsl 64) - 1, undefined, (1 bsl 64) - 2},
     {<<"i32_edges">>, (1 bsl 31) - 1, undefined, 1 bsl 31},
     {<<"u32_max">>, (1 bsl 32) - 1, undefined, 1 bsl 32},
     {<<"byte_edges">>, 255, undefined, 256},
     {<<"long_atom">>, 1, list_to_atom(lists:duplicate(255, $x)), 1},
     {<<"long_unicode_atom">>, 1, {list_to_atom(lists:duplicate(255, 16#1F600)), n@h}, 1},
     {binary:copy(<<"k">>, 300), 1, undefined, 1}].

bad_rows() ->
    [{arity3, {<<"bad">>, 1, undefined}},
     {arity5, {<<"bad">>, 1, undefined, 1, extra}},
     {uid_atom, {bad_uid, 1, undefined, 1}},
     {uid_list, {"bad", 1, undefined, 1}},
     {term_negative, {<<"bad">>, -1, undefined, 1}},
     {term_atom, {<<"bad">>, one, undefined, 1}},
     {term_float, {<<"bad">>, 1.0, undefined, 1}},
     {term_too_big, {<<"bad">>, 1 bsl 64, undefined, 1}},
     {vote_tuple3, {<<"bad">>, 1, {a, b, c}, 1}},
     {vote_name_binary, {<<"bad">>, 1, {<<"a">>, b}, 1}},
     {vote_node_integer, {<<"bad">>, 1, {a, 1}, 1}},
     {vote_binary, {<<"bad">>, 1, <<"a">>, 1}},
     {vote_pid, {<<"bad">>, 1, self(), 1}},
     {applied_negative, {<<"bad">>, 1, undefined, -5}},
     {applied_huge, {<<"bad">>, 1, undefined, 1 bsl 200}},
     {applied_map, {<<"bad">>, 1, undefined, #{}}}].

sample_terms() ->
    [{int, 0}, {int, 1}, {int, 255}, {int, 256}, {int, -1}, {int, -256},
     {int, (1 bsl 27) - 1}, {int, -(1 bsl 27)},
     {int, (1 bsl 31) - 1}, {int, -(1 bsl 31)}, {int, 1 bsl 31}, {int, -(1 bsl 31) - 1},
     {int, (1 bsl 32) - 1}, {int, 1 bsl 32}, {int, (1 bsl 63) - 1}, {int, 1 bsl 63},
     {int, -(1 bsl 63)}, {int, (1 bsl 64) - 1}, {int, -((1 bsl 64) - 1)},
     {bigint, 1 bsl 64}, {bigint, -(1 bsl 64)}, {bigint, 1 bsl 2100},
     {atom, a}, {atom, undefined}, {atom, 'Caps'}, {atom, 'with space'}, {atom, ''},
     {atom, 'it\'s'}, {atom, 'end'}, {atom, 'node@host.example'}, {atom, a_B9@x},
     {atom, list_to_atom(lists:duplicate(255, $z))},
     {binary, <<>>}, {binary, <<"abc">>}, {binary, <<0, 255, 10>>},
     {tuple, {}}, {tuple, {a}}, {tuple, {1, {2, {3}}, <<4>>}},
     {tuple, list_to_tuple(lists:seq(1, 300))},
     {list, []}, {list, [a]}, {list, [1, 2, 3]}, {list, "abc"}, {list, [1000, 2000]},
     {list, [a | b]}, {list, [1, 2 | <<3>>]}, {list, [[], [[]]]},
     {list, lists:seq(1, 70000)},
     {float, 1.5}, {map, #{a => 1}}, {pid, self()}, {ref, make_ref()},
     {fun_, fun erlang:abs/1}, {bitstring, <<1:3>>}].

%% ---- output ----

write_rows(File, Rows) ->
    file:write_file(File, [[row_line(R), $\n] || R <- Rows]).

row_line({Uid, Term, Vote, Applied}) when is_binary(Uid) ->
    ["bin:", binary:encode_hex(Uid), " ", int_or_undefined(Term), " ",
     vote(Vote), " ", int_or_undefined(Applied)];
row_line(Other) ->
    io_lib:format("other ~w", [Other]).

int_or_undefined(undefined) -> "undefined";
int_or_undefined(I) when is_integer(I) -> integer_to_list(I);
int_or_undefined(Other) -> io_lib:format("other:~w", [Other]).

vote(undefined) -> "none";
vote(A) when is_atom(A) -> ["atom:", hex_atom(A)];
vote({N, Node}) when is_atom(N), is_atom(Node) -> ["id:", hex_atom(N), ",", hex_atom(Node)];
vote(Other) -> io_lib:format("other:~w", [Other]).

hex_atom(A) -> binary:encode_hex(atom_to_binary(A, utf8)).

write_terms(File, Terms) ->
    file:write_file(File, [[io_lib:format("~w", [T]), $\n] || T <- Terms]).
